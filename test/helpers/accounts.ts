/**
 * Account fixtures for integration tests of every domain: `createTestUser` registers a user,
 * reads the code from the development mailbox and verifies it, returning tokens and the first
 * workspace. `api` is a small JSON client over node:http.
 *
 * Each call comes from a random 127.x.y.z source address (loopback servers only), so suites that
 * create many users never trip the per-IP rate limits of the auth routes.
 */
import http from 'node:http';
import { randomBytes, randomInt } from 'node:crypto';
import { createAccountsDomain, type AccountsOptions } from '../../control-plane/accounts/index.js';
import type { ControlPlaneDeps } from '../../control-plane/domain.js';
import { startControlPlaneServer } from '../../control-plane/http/server.js';
import { createHealthService } from '../../control-plane/health/service.js';
import { healthRoutes } from '../../control-plane/health/routes.js';
import { HealthService } from '../../shared/gen/voiceplane/v1/health_pb.js';

export interface TestUser {
  userId: string;
  email: string;
  password: string;
  /** Access token (JWT). */
  token: string;
  refreshToken: string;
  /** The first workspace, created at verification (the user is its owner). */
  workspaceId: string;
}

export interface ApiResponse<T = any> {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** Parsed JSON (or the raw text when not JSON). */
  body: T;
}

export interface ApiOptions {
  body?: unknown;
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string;
  headers?: Record<string, string>;
  /** Raw body text (overrides `body`). */
  rawBody?: string | Buffer;
  /** Source address; default: a random 127.x.y.z when the target is 127.0.0.1. */
  localAddress?: string;
}

/**
 * A running control plane: its port, and the in-process mailbox when there is one; `orgApiKey`
 * (a child process) lets `readCode` read the mailbox over HTTP, which needs the organization key.
 */
type AppRef = { port: number; orgApiKey?: string; accounts?: { mailbox?: { lastCode(email: string): string | undefined } } } | string;

export function baseUrlOf(app: AppRef): string {
  return typeof app === 'string' ? app.replace(/\/$/, '') : `http://127.0.0.1:${app.port}`;
}

export function randomLoopback(): string {
  return `127.${randomInt(1, 255)}.${randomInt(1, 255)}.${randomInt(1, 255)}`;
}

export function api<T = any>(app: AppRef, method: string, path: string, opts: ApiOptions = {}): Promise<ApiResponse<T>> {
  const url = new URL(baseUrlOf(app) + path);
  const text = opts.rawBody ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  if (text !== undefined) headers['content-type'] ??= 'application/json';
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const localAddress = opts.localAddress ?? (url.hostname === '127.0.0.1' ? randomLoopback() : undefined);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { method, hostname: url.hostname, port: url.port, path: url.pathname + url.search, headers, localAddress, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks).toString('utf8');
          let body: unknown = raw;
          try {
            body = raw ? JSON.parse(raw) : undefined;
          } catch {
            // not JSON: keep the text
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: body as T });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(15_000, () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(text);
  });
}

/**
 * The newest one-time code mailed to `email`: from the in-process mailbox when given, else GET
 * /api/v1/dev/mailbox with the app's organization key (the route takes no other credential).
 */
export async function readCode(app: AppRef, email: string): Promise<string> {
  const local = typeof app === 'object' ? app.accounts?.mailbox?.lastCode(email) : undefined;
  if (local) return local;
  const token = typeof app === 'object' ? app.orgApiKey : undefined;
  if (!token) throw new Error(`no in-process mailbox and no orgApiKey to read /api/v1/dev/mailbox for ${email}`);
  const res = await api(app, 'GET', `/api/v1/dev/mailbox?email=${encodeURIComponent(email)}`, { token });
  const code = res.body?.data?.find((m: { code?: string }) => m.code)?.code;
  if (res.status !== 200 || !code) throw new Error(`no code in the dev mailbox for ${email} (status ${res.status})`);
  return code;
}

/**
 * Registers and verifies a new user. `app`: the running control plane (`{port}` or the object
 * from `startControlPlane`) or a base URL.
 */
export async function createTestUser(
  app: AppRef,
  opts: { email?: string; password?: string; firstName?: string; lastName?: string } = {},
): Promise<TestUser> {
  const email = (opts.email ?? `user-${randomBytes(6).toString('hex')}@example.com`).toLowerCase();
  const password = opts.password ?? `pw-${randomBytes(9).toString('base64url')}`;
  const reg = await api(app, 'POST', '/api/v1/auth/register', {
    body: { email, password, first_name: opts.firstName ?? 'Test', last_name: opts.lastName ?? 'User' },
  });
  if (reg.status !== 200) throw new Error(`register ${email}: ${reg.status} ${JSON.stringify(reg.body)}`);
  const code = await readCode(app, email);
  const ver = await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code } });
  if (ver.status !== 200) throw new Error(`verify-otp ${email}: ${ver.status} ${JSON.stringify(ver.body)}`);
  const d = ver.body.data;
  return { userId: d.user.id, email, password, token: d.access_token, refreshToken: d.refresh_token, workspaceId: d.workspace.id };
}

/**
 * The accounts domain (plus health) on its own server, for tests that need domain options
 * (rate limits, a mailer, cache bounds) or another clock. Other suites use `startControlPlane`.
 */
export async function startAccountsServer(deps: ControlPlaneDeps, opts: AccountsOptions = {}) {
  const accounts = await createAccountsDomain(deps, opts);
  const server = await startControlPlaneServer({
    port: 0,
    host: '127.0.0.1',
    logger: deps.logger,
    maxBodyBytes: deps.config.maxBodyBytes,
    services: [{ service: HealthService, impl: createHealthService(deps) }, ...accounts.services] as never,
    routes: [...healthRoutes, ...accounts.routes],
  });
  return {
    port: server.port,
    accounts,
    async close() {
      await server.close();
      await accounts.close?.();
    },
  };
}
