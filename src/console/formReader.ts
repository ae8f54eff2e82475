/** A POSTed form (application/x-www-form-urlencoded), read with a size cap: more is 413. */
import type { IncomingMessage } from 'node:http';
import { HttpError } from './errors.ts';

const MAX_FORM_BYTES = 1024 * 1024;

export async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) throw new HttpError(413, 'form too large');
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
