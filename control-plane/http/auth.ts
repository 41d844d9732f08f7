/**
 * The authentication / authorization contract every domain uses. Implemented by the accounts
 * domain (`control-plane/accounts/auth.ts`); other domains receive it through their deps.
 */
import type { HandlerContext } from '@connectrpc/connect';

export type WorkspaceRole = 'owner' | 'admin' | 'manager' | 'member';

export const ROLE_RANK: Record<WorkspaceRole, number> = { member: 1, manager: 2, admin: 3, owner: 4 };

export interface Principal {
  userId: string;
  email: string;
  /** The organization owner (ORG_API_KEY): acts as owner of every workspace. */
  isOrgOwner: boolean;
  via: 'jwt' | 'api_key';
  /** API keys: the key's scopes (`[]` or `*`: unscoped, see http/scopes.ts). JWTs: `['*']`. */
  scopes: string[];
  apiKeyId?: string;
  /** The bearer is ORG_API_KEY itself (not a key the organization owner created, nor their session). */
  orgKey?: true;
}

export interface Auth {
  /**
   * Resolves the bearer of this call (JWT or API key); throws UNAUTHORIZED. Also enforces the
   * API-key scope the call's method needs (http/scopes.ts; 403 FORBIDDEN). Cached per call.
   */
  principal(ctx: HandlerContext): Promise<Principal>;
  /** The caller's role in a workspace, undefined when not a member (org owner: `owner` everywhere). */
  roleIn(p: Principal, workspaceId: string): Promise<WorkspaceRole | undefined>;
  /**
   * Throws unless the caller has at least `min` (default member) in the workspace. Not a member:
   * NOT_FOUND by default (the spec prefers 404 for other tenants' data), FORBIDDEN with `onDenied`.
   * A member below `min` gets FORBIDDEN.
   */
  requireWorkspace(p: Principal, workspaceId: string, opts?: { min?: WorkspaceRole; onDenied?: 'not_found' | 'forbidden' }): Promise<WorkspaceRole>;
  /** For a row found by id: not a member (or no row: `workspaceId` undefined) is `<what> not found`, never "workspace not found". */
  requireRowWorkspace(p: Principal, workspaceId: string | undefined, what: string, min?: WorkspaceRole): Promise<WorkspaceRole>;
  /** Ids of every workspace the caller belongs to (org owner: all). */
  workspaceIds(p: Principal): Promise<string[]>;
  /** The caller's own default workspace (the first one they own), if any. */
  defaultWorkspaceId(p: Principal): Promise<string | undefined>;
}
