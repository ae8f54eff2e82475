/**
 * A TCP proxy on 127.0.0.1 in front of the shared Redis or Postgres, so a FAULT- test can take a
 * dependency away without touching the real server: `cut()` refuses new connections (the port
 * stops listening: ECONNREFUSED, as with a stopped server) and destroys the open ones; `stall()`
 * makes it a black hole (a dropped network path: connections accepted, nothing forwarded either
 * way, nothing closed); `restore()` forwards again on the same port (a stalled connection is
 * dropped then, as a peer that timed out would drop it).
 */
import net from 'node:net';

export type TcpProxy = {
  port: number;
  /** The target URL with host and port replaced by the proxy's (`redis://127.0.0.1:6379/3` → `redis://127.0.0.1:<port>/3`). */
  url(target: string): string;
  cut(): Promise<void>;
  /** No answer at all: connections are accepted and kept, nothing is forwarded either way. */
  stall(): void;
  restore(): Promise<void>;
  /** Connections open through the proxy now. */
  open(): number;
  close(): Promise<void>;
};

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  let stalled = false;
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>();
  const server = net.createServer((client) => {
    track(client);
    if (stalled) return; // a black hole: accepted, never answered
    const upstream = net.connect(targetPort, targetHost);
    track(upstream);
    const pair = { client, upstream };
    pairs.add(pair);
    client.on('close', () => {
      pairs.delete(pair);
      upstream.destroy();
    });
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  const port = await listen(0);
  let listening = true;
  const stopListening = () =>
    new Promise<void>((resolve) => {
      if (!listening) return resolve();
      listening = false;
      server.close(() => resolve());
      for (const s of sockets) s.destroy();
    });
  return {
    port,
    url(target) {
      const u = new URL(target);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    cut: stopListening,
    stall() {
      stalled = true;
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    async restore() {
      if (stalled) {
        stalled = false;
        for (const s of sockets) s.destroy();
      }
      if (listening) return;
      await listen(port);
      listening = true;
    },
    open: () => sockets.size / 2,
    close: stopListening,
  };
}
