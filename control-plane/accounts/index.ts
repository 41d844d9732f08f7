/**
 * The accounts domain: users, registration with emailed codes, sessions, API keys, workspaces,
 * members and workspace memory. Also implements `Auth` for every other domain.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import { ApiKeyService, AuthService, DevMailboxService, MemoryService, WorkspaceService } from '../../shared/gen/voiceplane/v1/accounts_pb.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import { createApiKeyService } from './api-key-service.js';
import { AccountsAuth, type AuthOptions } from './auth.js';
import { createAuthService } from './auth-service.js';
import { createMailer, DevMailbox, type Mailer } from './mail.js';
import { createMemoryService } from './memory-service.js';
import { seedOrgKey } from './org.js';
import { DEFAULT_RATE_LIMITS, RateLimiter, type RateLimits } from './rate-limit.js';
import { accountRoutes, devMailboxRoutes } from './routes.js';
import { Sessions } from './sessions.js';
import { TokenService } from './tokens.js';
import { iso } from '../http/validate.js';
import { AppError } from '../../shared/errors.js';
import { createWorkspaceService, type WorkspaceDeleteHook } from './workspace-service.js';

export type { DevMailbox, Mailer } from './mail.js';

export interface AccountsDomain extends Domain {
  /** The `Auth` every other domain receives; the concrete type so tests can await `usageWritten()`. */
  auth: AccountsAuth;
  /** The development mailbox, when SMTP is not configured (never in production). */
  mailbox?: DevMailbox;
  /** Outgoing mail (SMTP or the development mailbox), shared with alert notifications. */
  mailer: Mailer;
  /** Registers another domain's part in deleting a workspace (see WorkspaceDeleteHook). */
  onWorkspaceDelete(hook: WorkspaceDeleteHook): void;
}

export interface AccountsOptions {
  /** Outgoing mail. Default: SMTP from SMTP_URL, else the development mailbox (refused in production). */
  mailer?: Mailer;
  /** Overrides of the default rate limits (see rate-limit.ts). */
  rateLimits?: Partial<RateLimits>;
  /** Cache bounds of bearer resolution (see auth.ts). */
  auth?: AuthOptions;
}

export async function createAccountsDomain(deps: ControlPlaneDeps, opts: AccountsOptions = {}): Promise<AccountsDomain> {
  const { mailer, mailbox } = opts.mailer
    ? { mailer: opts.mailer, mailbox: opts.mailer instanceof DevMailbox ? opts.mailer : undefined }
    : createMailer(deps.config, deps.logger, deps.clock);
  if (mailbox && deps.config.nodeEnv === 'production') throw new Error('invalid configuration: the development mailbox is refused in production');

  const revokedOrgKeys = await seedOrgKey(deps.sql, deps.config.orgApiKey, deps.logger, deps.clock.now(), deps.config.orgApiKeyGenerated === true);

  const tokens = new TokenService(deps.jwtKey, deps.clock);
  const auth = new AccountsAuth(deps.sql, tokens, deps.clock, deps.logger, { cacheTtlMs: deps.config.cacheTtlMs, ...opts.auth }, deps.registry.invalidations);
  await auth.start();
  // A replica started with a new ORG_API_KEY revoked the old one: the others drop it too.
  for (const hash of revokedOrgKeys) await auth.forgetKey(hash);
  const sessions = new Sessions(deps.sql, tokens, deps.clock);
  const limiter = new RateLimiter(deps.registry.windows, deps.clock, { ...DEFAULT_RATE_LIMITS, ...opts.rateLimits });

  const deleteHooks: WorkspaceDeleteHook[] = [];
  const services: ServiceBinding[] = [
    { service: AuthService, impl: createAuthService({ deps, auth, tokens, sessions, limiter, mailer }) },
    { service: ApiKeyService, impl: createApiKeyService(deps, auth, tokens) },
    { service: WorkspaceService, impl: createWorkspaceService(deps, auth, deleteHooks) },
    { service: MemoryService, impl: createMemoryService(deps, auth) },
  ] as ServiceBinding[];
  const routes = [...accountRoutes];
  if (mailbox) {
    services.push({ service: DevMailboxService, impl: devMailboxService(mailbox, auth) } as ServiceBinding);
    routes.push(...devMailboxRoutes);
  }

  let closed = false;
  return {
    services,
    routes,
    auth,
    mailbox,
    mailer,
    onWorkspaceDelete: (hook) => void deleteHooks.push(hook),
    async close() {
      if (closed) return;
      closed = true;
      await auth.stop();
      await mailer.close?.();
    },
  };
}

/**
 * `GET /api/v1/dev/mailbox`: only while the development mailbox is active (never in production),
 * and only for the organization owner (`Authorization: Bearer <ORG_API_KEY>`, the credential of
 * the `/agent-portal/admin` routes): the mails hold one-time codes, portal reset tokens and
 * temporary passwords of every user and agent (spec doc 3, authentication rule 5: never display a
 * `temp_password` to anyone else). No or a bad bearer: 401; any other caller: 403.
 */
function devMailboxService(mailbox: DevMailbox, auth: AccountsAuth): ServiceImpl<typeof DevMailboxService> {
  return {
    async listMessages(req, ctx) {
      const p = await auth.principal(ctx);
      // The key itself: a key the organization owner created (any scope) or their session is not it.
      if (!p.orgKey) throw new AppError('FORBIDDEN', 'the development mailbox is read with the organization API key (ORG_API_KEY)');
      const messages = mailbox.messages(req.email || undefined).reverse();
      return { messages: messages.map((m) => ({ to: m.to, subject: m.subject, text: m.text, sentAt: iso(new Date(m.sentAtMs)), code: m.code ?? '' })) };
    },
  };
}
