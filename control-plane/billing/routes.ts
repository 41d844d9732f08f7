/**
 * REST routes of billing (an addition to the spec; envelope family). Operator routes and reader
 * routes share paths under `/api/v1/billing`; docs/billing.md lists who may call which.
 */
import { BillingService } from '../../shared/gen/voiceplane/v1/billing_pb.js';
import type { RestRoute } from '../http/rest.js';

const B = '/api/v1/billing';
const W = `${B}/workspaces/:workspace_id`;
const S = BillingService;

export const billingRoutes: RestRoute[] = [
  { method: 'GET', path: `${B}/prices`, service: S, rpc: 'getPrices', response: (json) => ({ data: json.prices }) },
  { method: 'PUT', path: `${B}/prices`, service: S, rpc: 'setPrices', response: (json) => ({ data: json.prices }) },
  { method: 'GET', path: `${W}/balance`, service: S, rpc: 'getBalance' },
  { method: 'GET', path: `${W}/ledger`, service: S, rpc: 'listLedger', response: (json) => ({ data: json.entries, meta: json.meta }) },
  { method: 'POST', path: `${W}/top-ups`, service: S, rpc: 'topUp', status: 201 },
  { method: 'POST', path: `${W}/adjustments`, service: S, rpc: 'adjust', status: 201 },
];
