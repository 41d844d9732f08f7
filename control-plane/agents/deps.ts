import type { ControlPlaneDeps } from '../domain.js';
import type { Auth } from '../http/auth.js';
import type { AgentRow, ConnectorBindingJson } from './types.js';

/** Connector tools (control-plane/connectors/binder.ts). Without it, every `connector` is UNKNOWN_CONNECTOR. */
export interface ConnectorBinder {
  /** The workspace's live, healthy connection of a provider (id or name) as a binding of every usable action. */
  bindingFor(workspaceId: string, idOrName: string): Promise<{ providerId: string; description: string; binding: ConnectorBindingJson }>;
  /**
   * Throws NOT_FOUND unless `connectionId` is a live connection of the workspace, and 400 naming
   * the action unless each of `actionNames` (`<provider_id>__<action>`) is an action of that
   * connection's provider in the catalog.
   */
  assertLive(workspaceId: string, connectionId: string, actionNames?: string[]): Promise<void>;
  /** Throws CONNECTOR_NOT_CONNECTED (409) unless `connectionId` is a live, healthy connection of the workspace. */
  requireConnected(workspaceId: string, connectionId: string): Promise<void>;
}

/**
 * Runs before every publish (control-plane/simtests/gate.ts: the agent's `publish_gate`); throws
 * to refuse it (409 with the failing test cases). Without it, publishing is never gated.
 */
export interface PublishGate {
  check(agent: AgentRow, userId: string, signal: AbortSignal): Promise<void>;
}

/** What the agents domain (and the provider registry it hosts) needs from the control plane. */
/** `registry`: change notices for the agent view cache (view-cache.ts); without it, this replica's writes only. */
export type AgentsDeps = Pick<ControlPlaneDeps, 'sql' | 'secrets' | 'logger' | 'clock' | 'config'> & Partial<Pick<ControlPlaneDeps, 'registry'>> & { auth: Auth; connectors?: ConnectorBinder; publishGate?: PublishGate };
