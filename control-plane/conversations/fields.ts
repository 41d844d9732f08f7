/**
 * The conversations domain's request vocabulary: list bounds and the enums its filters and bodies
 * accept. The field checks themselves are the shared ones (control-plane/http/validate.ts).
 */

/** List `limit`: default 20, 1..500 (spec: "limit (default 20, max 500)"). */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 500;
export const STATUSES = ['active', 'completed', 'failed'] as const;
export type ConversationStatus = (typeof STATUSES)[number];
export const ROLES = ['user', 'assistant'] as const;
export const SEGMENT_KINDS = ['ai', 'human'] as const;
