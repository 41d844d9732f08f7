/**
 * Function names the engine itself offers the model on some calls: an agent's HTTP tool of the same
 * name would be offered twice (vendors refuse duplicate names) and would shadow the built-in (the
 * model's `set_variables` went to the customer's URL and no variable was saved). Refused at tool
 * create/update, and dropped from a call's list should an older tool still carry one.
 */
import { SET_VARIABLES_FUNCTION, TRANSITION_PREFIX } from '../voice/flow.js';

export const SEARCH_KNOWLEDGE_FUNCTION = 'search_knowledge';
export const TRANSFER_TO_HUMAN_FUNCTION = 'transfer_to_human';

const RESERVED: ReadonlySet<string> = new Set([SEARCH_KNOWLEDGE_FUNCTION, SET_VARIABLES_FUNCTION, TRANSFER_TO_HUMAN_FUNCTION]);

export function isReservedToolName(name: string): boolean {
  return RESERVED.has(name) || name.startsWith(TRANSITION_PREFIX);
}

export const RESERVED_TOOL_NAMES_TEXT = `${[...RESERVED].join(', ')} and names starting with ${TRANSITION_PREFIX}`;
