/**
 * Topics of the control plane's change notices (`registry.invalidations`), and who publishes
 * them. Keys are ids. docs/caching.md has the table of caches and notices.
 */
export const Topic = {
  /** An API key was revoked: key = its SHA-256 (as cached by bearer resolution). */
  key: 'key',
  /** A login session was revoked: key = session id. */
  session: 'session',
  /** A user's memberships or roles changed, or a workspace they own was created: key = user id. */
  user: 'user',
  /** A workspace was deleted, or something agent views show from it changed: key = workspace id. */
  workspace: 'workspace',
  /** An agent's draft, bindings, live version or deletion: key = agent id. */
  agent: 'agent',
} as const;

export type Topic = (typeof Topic)[keyof typeof Topic];
