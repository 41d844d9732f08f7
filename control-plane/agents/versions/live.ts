/**
 * "The live configuration of agent X": the one resolver voice sessions, calls and campaigns use.
 * It reads the published snapshot (never the draft) and decrypts its secrets for internal use.
 * Knowledge contents are read now from workspace memory (see NOTES.md).
 */
import { AppError, notFound } from '../../../shared/errors.js';
import { isUuid } from '../../../shared/ids.js';
import type { SecretBox } from '../../../shared/secrets.js';
import type { Sql } from '../../../shared/db/client.js';
import { iso } from '../db.js';
import { toE164 } from '../telephony/phone.js';
import type { LiveAgentConfig } from '../types.js';
import { boundMemoryIds, liveFromSnapshot } from './snapshot.js';
import { liveAgentIdByNumber, liveRow, memoryItemsFor } from './store.js';

/** The agent exists but was never published: there is no live configuration to run. */
export class NotPublishedError extends AppError {
  constructor(readonly agentId: string) {
    super('CONFLICT', `agent ${agentId} has no published version: publish it first (POST /agents/${agentId}/versions/publish)`);
    this.name = 'NotPublishedError';
  }
}

export interface LiveResolver {
  /** Throws NOT_FOUND for an unknown agent and NotPublishedError (CONFLICT) when never published. */
  liveConfig(agentId: string, signal?: AbortSignal): Promise<LiveAgentConfig>;
  /** Inbound calls: the agent whose live version carries this number (no auth). Undefined when none. */
  findAgentByNumber(phoneNumber: string, signal?: AbortSignal): Promise<LiveAgentConfig | undefined>;
}

export function createLiveResolver(deps: { sql: Sql; secrets: SecretBox }): LiveResolver {
  const { sql, secrets } = deps;
  async function liveConfig(agentId: string, signal?: AbortSignal): Promise<LiveAgentConfig> {
    if (!isUuid(agentId)) throw notFound('agent');
    const row = await liveRow(sql, agentId.toLowerCase(), signal);
    if (!row) throw notFound('agent');
    if (row.live_version === null || !row.snapshot) throw new NotPublishedError(row.id);
    const memory = await memoryItemsFor(sql, row.snapshot.workspace_id, boundMemoryIds(row.snapshot), signal);
    return liveFromSnapshot(row.snapshot, { version_number: row.live_version, published_at: iso(row.published_at) }, secrets, memory);
  }
  return {
    liveConfig,
    async findAgentByNumber(phoneNumber, signal) {
      const e164 = toE164(phoneNumber);
      if (!e164) return undefined;
      const id = await liveAgentIdByNumber(sql, e164, signal);
      if (!id) return undefined;
      try {
        return await liveConfig(id, signal);
      } catch (e) {
        // deleted between the lookup and the read: same as no agent
        if (e instanceof AppError && e.code === 'NOT_FOUND') return undefined;
        throw e;
      }
    },
  };
}
