/**
 * Plain HTTP to 127.0.0.1 for tests that need what fetch will not do: a request exactly as written
 * (fetch would not send another Host header), and a free port to bind a worker to.
 */
import http from 'node:http';
import net from 'node:net';

/** A port free on 127.0.0.1 now (for a worker whose public URL must name its port before it starts). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** One GET from 127.0.0.1 with exactly these headers (Host included); the status and the body text. */
export function rawGet(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
