/**
 * AuthService: register -> emailed 6-digit code -> verify-otp (tokens + first workspace), login,
 * refresh (rotation with reuse detection), validate (X-Auth-Token) and me.
 *
 * Codes: HMAC-hashed, 10 minutes, at most 5 wrong attempts per code (then dead: 400 until a new
 * code is requested). Failures that must be remembered (attempt counts, family revocation) commit
 * first and are thrown after the transaction.
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { AuthService } from '../../shared/gen/voiceplane/v1/accounts_pb.js';
import { AppError, conflict, invalid, unauthorized } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { ControlPlaneDeps } from '../domain.js';
import { remoteIpOf } from '../http/context.js';
import type { AccountsAuth } from './auth.js';
import { otpMail, type Mailer } from './mail.js';
import { dummyHash, hashPassword, verifyPassword } from './passwords.js';
import type { RateLimiter } from './rate-limit.js';
import type { Sessions } from './sessions.js';
import { insertWorkspace, loadUser, userJson, workspaceJson, type Tx, type UserRow, type WorkspaceRow } from './sql.js';
import type { TokenService } from './tokens.js';
import { email, MAX_PASSWORD_CHARS, MAX_PERSON_NAME_CHARS, password, required } from '../http/validate.js';
import { Topic } from '../cache/topics.js';

export const OTP_TTL_MS = 10 * 60 * 1000;
export const OTP_MAX_WRONG_ATTEMPTS = 5;
const RESEND_MESSAGE = 'if the address has a pending registration, a new code has been sent';

export interface AuthServiceDeps {
  deps: ControlPlaneDeps;
  auth: AccountsAuth;
  tokens: TokenService;
  sessions: Sessions;
  limiter: RateLimiter;
  mailer: Mailer;
}

type VerifyOutcome =
  | { status: 'ok'; user: UserRow; workspace: WorkspaceRow; tokens: Awaited<ReturnType<Sessions['open']>> }
  | { status: 'invalid' }
  | { status: 'dead' };

export function createAuthService(s: AuthServiceDeps): ServiceImpl<typeof AuthService> {
  const { sql, clock, logger } = s.deps;

  /** Invalidates pending codes and stores a new one (inside the caller's transaction). */
  async function newCode(tx: Tx, userId: string): Promise<string> {
    const code = s.tokens.newOtpCode();
    const now = clock.now();
    await tx`update otp_codes set consumed_at = ${new Date(now)} where user_id = ${userId} and consumed_at is null`;
    await tx`insert into otp_codes (id, user_id, code_hash, expires_at)
             values (${newId()}, ${userId}, ${s.tokens.otpHash(userId, code)}, ${new Date(now + OTP_TTL_MS)})`;
    return code;
  }

  async function userFor(ctx: HandlerContext, token?: string) {
    const p = token === undefined ? await s.auth.principal(ctx) : await s.auth.resolve(token);
    const u = await loadUser(sql, p.userId);
    if (!u) throw unauthorized('user no longer exists');
    return userJson(u);
  }

  return {
    async register(req, ctx) {
      const em = email('email', req.email);
      const pw = password('password', req.password);
      const first = required('first_name', req.firstName, MAX_PERSON_NAME_CHARS);
      const last = required('last_name', req.lastName, MAX_PERSON_NAME_CHARS);
      await s.limiter.hit(['sendPerEmail', em], ['sendPerIp', remoteIpOf(ctx)]);
      const hash = await hashPassword(pw);
      const code = await sql.begin(async (tx) => {
        const [created] = await tx<{ id: string }[]>`
          insert into users (id, email, password_hash, first_name, last_name)
          values (${newId()}, ${em}, ${hash}, ${first}, ${last})
          on conflict ((lower(email))) do nothing
          returning id`;
        let userId = created?.id;
        if (!userId) {
          const [existing] = await tx<{ id: string; email_verified_at: Date | null }[]>`
            select id, email_verified_at from users where lower(email) = ${em} for update`;
          if (existing.email_verified_at) throw conflict('email is already registered', 'EMAIL_TAKEN');
          // A pending registration: the newest one wins (password and names replaced, new code).
          await tx`update users set password_hash = ${hash}, first_name = ${first}, last_name = ${last}, updated_at = now()
                   where id = ${existing.id}`;
          userId = existing.id;
        }
        return newCode(tx, userId);
      });
      try {
        await s.mailer.send(otpMail(em, code));
      } catch (err) {
        logger.error({ err, to: em }, 'could not send the verification email');
        throw new AppError('SERVICE_UNAVAILABLE', 'could not send the verification email; retry with /auth/resend-otp');
      }
      return { message: 'verification code sent', email: em };
    },

    async verifyOtp(req, ctx) {
      const em = email('email', req.email);
      const code = required('code', req.code, 16);
      if (!/^\d{6}$/.test(code)) throw invalid('code', 'must be 6 digits');
      await s.limiter.hit(['verifyPerEmail', em], ['verifyPerIp', remoteIpOf(ctx)]);
      const now = new Date(clock.now());
      const out = (await sql.begin(async (tx): Promise<VerifyOutcome> => {
        const [u] = await tx<(UserRow & { email_verified_at: Date | null })[]>`
          select id, email, first_name, last_name, created_at, email_verified_at
          from users where lower(email) = ${em} and not is_org_owner for update`;
        if (!u || u.email_verified_at) return { status: 'invalid' };
        const [otp] = await tx<{ id: string; code_hash: string; expires_at: Date; attempts: number }[]>`
          select id, code_hash, expires_at, attempts from otp_codes
          where user_id = ${u.id} and consumed_at is null order by created_at desc limit 1`;
        if (!otp || otp.expires_at.getTime() <= now.getTime()) return { status: 'invalid' };
        if (otp.attempts >= OTP_MAX_WRONG_ATTEMPTS) return { status: 'dead' };
        if (!s.tokens.otpMatches(u.id, code, otp.code_hash)) {
          await tx`update otp_codes set attempts = attempts + 1 where id = ${otp.id}`;
          return { status: 'invalid' };
        }
        await tx`update otp_codes set consumed_at = ${now} where id = ${otp.id}`;
        await tx`update users set email_verified_at = ${now}, updated_at = now() where id = ${u.id}`;
        const workspace = await insertWorkspace(tx, u.id, `${u.first_name}'s workspace`);
        const tokens = await s.sessions.open(tx, u.id);
        return { status: 'ok', user: u, workspace, tokens };
      })) as VerifyOutcome;
      if (out.status === 'dead') throw invalid('code', 'too many wrong attempts; request a new code with /auth/resend-otp');
      if (out.status === 'invalid') throw invalid('code', 'is invalid or expired');
      await s.auth.changed(Topic.user, out.user.id);
      return { ...out.tokens, user: userJson(out.user), workspace: workspaceJson(out.workspace) };
    },

    async resendOtp(req, ctx) {
      const em = email('email', req.email);
      await s.limiter.hit(['sendPerEmail', em], ['sendPerIp', remoteIpOf(ctx)]);
      // Same answer whether or not the address exists or is pending (no enumeration).
      const code = await sql.begin(async (tx) => {
        const [u] = await tx<{ id: string }[]>`
          select id from users where lower(email) = ${em} and email_verified_at is null and not is_org_owner for update`;
        return u ? newCode(tx, u.id) : undefined;
      });
      if (code) {
        await s.mailer.send(otpMail(em, code)).catch((err: unknown) => logger.error({ err, to: em }, 'could not resend the verification email'));
      }
      return { message: RESEND_MESSAGE, email: em };
    },

    async login(req, ctx) {
      const em = email('email', req.email);
      if (!req.password) throw invalid('password', 'is required');
      await s.limiter.hit(['loginPerEmail', em], ['loginPerIp', remoteIpOf(ctx)]);
      const [u] = await sql<(UserRow & { password_hash: string; email_verified_at: Date | null })[]>`
        select id, email, first_name, last_name, created_at, password_hash, email_verified_at
        from users where lower(email) = ${em} and not is_org_owner`;
      // Always run one scrypt so a missing user costs the same time as a wrong password.
      const ok = req.password.length <= MAX_PASSWORD_CHARS && (await verifyPassword(req.password, u?.password_hash ?? (await dummyHash())));
      if (!u || !ok) throw unauthorized('invalid email or password');
      // Only after the password matched, so the answer does not reveal pending registrations.
      if (!u.email_verified_at) throw new AppError('FORBIDDEN', 'email not verified: verify the emailed code first');
      const tokens = await sql.begin((tx) => s.sessions.open(tx, u.id));
      return { ...tokens, user: userJson(u) };
    },

    async refresh(req, ctx) {
      const token = required('refresh_token', req.refreshToken, 512);
      await s.limiter.hit(['refreshPerIp', remoteIpOf(ctx)]);
      const r = await s.sessions.rotate(token);
      if (r.status === 'reused') {
        await s.auth.forgetSession(r.sessionId);
        logger.warn({ userId: r.userId, sessionId: r.sessionId }, 'refresh token reused: session revoked');
        throw unauthorized('refresh token already used; the session was revoked');
      }
      if (r.status !== 'ok') throw unauthorized('invalid or expired refresh token');
      const u = await loadUser(sql, r.userId);
      if (!u) throw unauthorized('user no longer exists');
      return { ...r.tokens, user: userJson(u) };
    },

    async validate(req, ctx) {
      const token = (ctx.requestHeader.get('x-auth-token') ?? req.token ?? '').trim();
      if (!token) throw unauthorized('missing X-Auth-Token header');
      return userFor(ctx, token);
    },

    async me(_req, ctx) {
      return userFor(ctx);
    },
  };
}
