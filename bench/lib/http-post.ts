/**
 * A JSON POST over a keep-alive `node:http` agent: the load generator's cheap client. undici's
 * `fetch` costs the generator several times the server's own per-request CPU (WHATWG streams,
 * Headers, a Response per call), and in the routing bench the generator shares the 2 cores.
 */
import http from 'node:http';

export class JsonPoster {
  private readonly agent: http.Agent;

  constructor(maxSockets: number) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets });
  }

  post(port: number, path: string, body: string): Promise<{ status: number; json: unknown }> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port, path, method: 'POST', agent: this.agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            try {
              resolve({ status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined });
            } catch {
              reject(new Error(`${res.statusCode}: not JSON: ${text.slice(0, 200)}`));
            }
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}
