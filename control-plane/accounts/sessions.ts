/**
 * Login sessions and refresh-token rotation. A session is one login (verify-otp or login) and the
 * family of its refresh tokens. Each refresh marks the presented token used and issues the next
 * one; presenting a used token again means it was copied, so the whole family (and, through the
 * `sid` claim, its access tokens) is revoked.
 */
import { newId } from '../../shared/ids.js';
import type { Clock } from '../../shared/clock.js';
import type { Sql } from '../../shared/db/client.js';
import { ACCESS_TOKEN_TTL_S, REFRESH_TOKEN_TTL_MS, sha256Hex, type TokenService } from './tokens.js';
import type { Tx } from './sql.js';

export interface IssuedTokens {
  accessToken: string;
  refreshToken: string;
  expiresIn: number;
  tokenType: 'Bearer';
}

export type RotateResult =
  | { status: 'ok'; userId: string; tokens: IssuedTokens }
  | { status: 'invalid' }
  | { status: 'reused'; userId: string; sessionId: string };

export class Sessions {
  constructor(
    private readonly sql: Sql,
    private readonly tokens: TokenService,
    private readonly clock: Clock,
  ) {}

  /** Opens a session inside the caller's transaction. */
  async open(tx: Tx, userId: string): Promise<IssuedTokens> {
    const sessionId = newId();
    await tx`insert into sessions (id, user_id) values (${sessionId}, ${userId})`;
    return this.issue(tx, userId, sessionId);
  }

  async rotate(refreshToken: string): Promise<RotateResult> {
    const hash = sha256Hex(refreshToken);
    const now = new Date(this.clock.now());
    return this.sql.begin(async (tx) => {
      // Locking the session row serialises concurrent refreshes of one family.
      const [row] = await tx<
        { id: string; user_id: string; family_id: string; expires_at: Date; used_at: Date | null; revoked_at: Date | null; session_revoked_at: Date | null }[]
      >`
        select r.id, r.user_id, r.family_id, r.expires_at, r.used_at, r.revoked_at, s.revoked_at as session_revoked_at
        from refresh_tokens r join sessions s on s.id = r.family_id
        where r.token_hash = ${hash}
        for update of s, r`;
      if (!row || row.revoked_at || row.session_revoked_at) return { status: 'invalid' } as const;
      if (row.used_at) {
        await tx`update sessions set revoked_at = ${now} where id = ${row.family_id}`;
        await tx`update refresh_tokens set revoked_at = ${now} where family_id = ${row.family_id} and revoked_at is null`;
        return { status: 'reused', userId: row.user_id, sessionId: row.family_id } as const;
      }
      if (row.expires_at.getTime() <= now.getTime()) return { status: 'invalid' } as const;
      await tx`update refresh_tokens set used_at = ${now} where id = ${row.id}`;
      const tokens = await this.issue(tx, row.user_id, row.family_id);
      return { status: 'ok', userId: row.user_id, tokens } as const;
    }) as Promise<RotateResult>;
  }

  private async issue(tx: Tx, userId: string, sessionId: string): Promise<IssuedTokens> {
    const refreshToken = this.tokens.newRefreshToken();
    const expiresAt = new Date(this.clock.now() + REFRESH_TOKEN_TTL_MS);
    await tx`
      insert into refresh_tokens (id, user_id, family_id, token_hash, expires_at)
      values (${newId()}, ${userId}, ${sessionId}, ${sha256Hex(refreshToken)}, ${expiresAt})`;
    const accessToken = await this.tokens.signAccess({ userId, sessionId });
    return { accessToken, refreshToken, expiresIn: ACCESS_TOKEN_TTL_S, tokenType: 'Bearer' };
  }
}
