/**
 * Portal credentials of human agents (spec doc 3 "Human agent portal admin", authentication rule
 * 5): set-password, reset-password (a single-use 1 h token by mail, or a temporary password
 * returned once), send-credentials, the reset confirmation and the agents' own login.
 *
 * Secrets: passwords are scrypt hashes (accounts/passwords.ts); reset and login tokens are stored
 * as sha-256. A temporary password is never logged: it is in the one response that created it
 * and in the mail send-credentials dispatches (letters and digits only, so the development
 * mailbox's 6-digit-code logger can never pick part of it up).
 */
import { randomBytes, randomInt } from 'node:crypto';
import type { Sql } from '../../shared/db/client.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { AppError, invalid, unauthorized } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import { dummyHash, hashPassword, verifyPassword } from '../accounts/passwords.js';
import type { Mailer } from '../accounts/mail.js';
import { password } from '../http/validate.js';
import { audit, getAgent, tokenHash, type AgentRow } from './store.js';

export const RESET_TOKEN_TTL_MS = 3_600_000;
export const LOGIN_TOKEN_TTL_MS = 12 * 3_600_000;
const TEMP_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnpqrstuvwxyz23456789';

export interface Actor {
  by: string;
  byId: string;
  ip: string;
}

export interface CredentialsDeps {
  sql: Sql;
  clock: Clock;
  logger: Logger;
  mailer: Mailer;
  /** PORTAL_EMAIL_ENABLED: false answers 503 SMTP_DISABLED wherever mail would be sent. */
  mailEnabled: boolean;
  publicBaseUrl: string;
  /** After a new password revoked the agent's logins: ends the presence session still open on them. */
  onLoginsRevoked?: (agentId: string, at: Date) => Promise<void>;
}

/**
 * A portal password as sent (spaces are characters of a password), 8-256 characters counted as
 * code points ("😀😀😀😀" is 4 and too short): the accounts rule (http/validate.ts `password`).
 * Every portal password rule (set-password, the reset confirmation) goes through here.
 */
export const passwordField = password;

export function tempPassword(): string {
  let s = '';
  for (let i = 0; i < 16; i++) s += TEMP_ALPHABET[randomInt(TEMP_ALPHABET.length)];
  return s;
}

export function createCredentials(deps: CredentialsDeps) {
  const { sql, clock } = deps;
  const now = () => new Date(clock.now());

  async function setHash(agentId: string, hash: string, at: Date): Promise<void> {
    // A new password ends outstanding reset links and portal logins.
    await sql`update human_agents set password_hash = ${hash}, password_set_at = ${at}, updated_at = ${at} where id = ${agentId}`;
    await sql`update human_agent_reset_tokens set revoked_at = ${at} where agent_id = ${agentId} and used_at is null and revoked_at is null`;
    await sql`update human_agent_tokens set revoked_at = ${at} where agent_id = ${agentId} and revoked_at is null`;
    // An open presence socket authenticated with a revoked login ends too (deactivation does the same).
    await deps.onLoginsRevoked?.(agentId, at).catch((err: unknown) => deps.logger.warn({ err, agentId }, 'presence session not ended after a password change'));
  }

  async function send(to: string, subject: string, text: string): Promise<void> {
    try {
      await deps.mailer.send({ to, subject, text });
    } catch (err) {
      deps.logger.warn({ err: (err as Error).message, to }, 'portal mail not dispatched');
      throw new AppError('UPSTREAM_UNAVAILABLE', 'the mail server did not accept the message');
    }
  }

  function requireMail(a: AgentRow): string {
    if (!a.email) throw new AppError('NO_EMAIL', 'the agent has no email address');
    if (!deps.mailEnabled) throw new AppError('SMTP_DISABLED', 'mail is not configured for the portal (PORTAL_EMAIL_ENABLED)');
    return a.email;
  }

  return {
    async setPassword(a: AgentRow, password: string, actor: Actor): Promise<void> {
      const at = now();
      await setHash(a.id, await hashPassword(password), at);
      await audit(sql, { agentId: a.id, action: 'set_password', ...actor, at });
    },

    async resetPassword(a: AgentRow, sendEmail: boolean, actor: Actor): Promise<{ emailSent: boolean; message: string; tempPassword?: string }> {
      const at = now();
      if (!sendEmail) {
        const temp = tempPassword();
        await setHash(a.id, await hashPassword(temp), at);
        await audit(sql, { agentId: a.id, action: 'reset_password', ...actor, details: { send_email: false }, at });
        return { emailSent: false, message: 'temporary password set; it is shown only in this response', tempPassword: temp };
      }
      const to = requireMail(a);
      const token = randomBytes(32).toString('base64url');
      await sql`update human_agent_reset_tokens set revoked_at = ${at} where agent_id = ${a.id} and used_at is null and revoked_at is null`;
      await sql`insert into human_agent_reset_tokens (token_hash, agent_id, expires_at, created_at) values (${tokenHash(token)}, ${a.id}, ${new Date(at.getTime() + RESET_TOKEN_TTL_MS)}, ${at})`;
      const link = `${deps.publicBaseUrl.replace(/\/+$/, '')}/agent-portal/reset-password?token=${token}`;
      await send(
        to,
        'Reset your agent portal password',
        `Hello ${a.display_name},\n\nUse this link within one hour to choose a new password for agent code ${a.agent_code}:\n${link}\n\nReset token: ${token}\n\nIf you did not expect this, tell your supervisor.`,
      );
      await audit(sql, { agentId: a.id, action: 'reset_password', ...actor, details: { send_email: true }, at });
      return { emailSent: true, message: 'reset link sent' };
    },

    async sendCredentials(a: AgentRow, temp: string, actor: Actor): Promise<void> {
      const to = requireMail(a);
      // Only the agent's current password is ever mailed (not an arbitrary string under our name).
      if (!a.password_hash || !(await verifyPassword(temp, a.password_hash))) throw invalid('temp_password', "is not the agent's current password");
      await send(
        to,
        'Your agent portal credentials',
        `Hello ${a.display_name},\n\nYour agent portal login:\nagent code: ${a.agent_code}\nworkspace: ${a.workspace_id}\ntemporary password: ${temp}\n\nPlease change it after your first login.`,
      );
      await audit(sql, { agentId: a.id, action: 'send_credentials', ...actor, at: now() });
    },

    /** Consumes a reset token (single use, 1 h) and sets the new password. */
    async confirmReset(token: string, password: string, ip: string): Promise<void> {
      const pw = passwordField('password', password);
      const at = now();
      const [row] = await sql<{ agent_id: string }[]>`
        update human_agent_reset_tokens set used_at = ${at}
        where token_hash = ${tokenHash(token ?? '')} and used_at is null and revoked_at is null and expires_at > ${at}
        returning agent_id`;
      if (!row) throw new AppError('INVALID_TOKEN', 'the reset token was used, revoked or is older than 1 hour');
      await setHash(row.agent_id, await hashPassword(pw), at);
      await audit(sql, { agentId: row.agent_id, action: 'password_changed', by: 'agent', byId: row.agent_id, ip, details: { via: 'reset_token' }, at });
    },

    /** Agent code + password -> a portal token (12 h). Unknown agent and wrong password look the same. */
    async login(workspaceId: string, agentCode: string, password: string): Promise<{ token: string; expiresAt: Date; agent: AgentRow }> {
      if (!isUuid(workspaceId ?? '')) throw invalid('workspace_id', 'must be a UUID');
      if (!agentCode) throw invalid('agent_code', 'is required');
      if (!password) throw invalid('password', 'is required');
      const [a] = await sql<AgentRow[]>`select * from human_agents where workspace_id = ${workspaceId} and lower(agent_code) = lower(${agentCode}) and is_active`;
      const ok = await verifyPassword(password, a?.password_hash ?? (await dummyHash()));
      if (!a || !a.password_hash || !ok) throw unauthorized('wrong agent code or password');
      const token = randomBytes(32).toString('base64url');
      const at = now();
      const expiresAt = new Date(at.getTime() + LOGIN_TOKEN_TTL_MS);
      await sql`insert into human_agent_tokens (token_hash, agent_id, expires_at, created_at) values (${tokenHash(token)}, ${a.id}, ${expiresAt}, ${at})`;
      return { token, expiresAt, agent: a };
    },

    /** The agent a portal token belongs to, if valid now. */
    async agentForToken(token: string): Promise<AgentRow | undefined> {
      if (!token || token.length > 200) return undefined;
      const [r] = await sql<{ agent_id: string }[]>`
        select agent_id from human_agent_tokens where token_hash = ${tokenHash(token)} and revoked_at is null and expires_at > ${now()}`;
      const a = r && (await getAgent(sql, r.agent_id));
      return a?.is_active ? a : undefined;
    },
  };
}

export type Credentials = ReturnType<typeof createCredentials>;
