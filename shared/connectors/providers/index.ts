/**
 * The adapters this build ships. A catalog provider without one here is listed as not yet
 * available: the catalog route hides it and connect answers 404 (docs/connectors.md, "Status").
 */
import { calcom } from './calcom.js';
import { hubspot } from './hubspot.js';
import { stripe } from './stripe.js';
import type { ProviderAdapter } from './types.js';
import { zendesk } from './zendesk.js';

export const ADAPTERS: ReadonlyMap<string, ProviderAdapter> = new Map([hubspot, zendesk, stripe, calcom].map((a) => [a.id, a]));
