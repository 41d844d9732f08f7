/**
 * REST routes of the campaigns domain (spec doc 2, "Campaigns"; envelope family). The CSV upload
 * and export are raw handlers (`http.ts`): multipart in, a streamed attachment out.
 */
import { CampaignService } from '../../shared/gen/voiceplane/v1/campaigns_pb.js';
import type { RestRoute } from '../http/rest.js';
import { restCampaign, restContact } from './views.js';

const C = '/api/v1/campaigns';
const S = CampaignService;
const one = (json: Record<string, unknown>) => ({ data: restCampaign(json) });

export const campaignRoutes: RestRoute[] = [
  { method: 'GET', path: C, service: S, rpc: 'listCampaigns', response: (json) => ({ data: ((json.campaigns ?? []) as unknown[]).map(restCampaign), meta: json.meta }) },
  // A create answers 201 like every other create (the spec's table names no status).
  { method: 'POST', path: C, service: S, rpc: 'createCampaign', status: 201, response: one },
  { method: 'GET', path: `${C}/:campaign_id`, service: S, rpc: 'getCampaign', response: one },
  { method: 'PATCH', path: `${C}/:campaign_id`, service: S, rpc: 'updateCampaign', response: one },
  { method: 'POST', path: `${C}/:campaign_id/start`, service: S, rpc: 'startCampaign', response: one, bodyType: 'none' },
  { method: 'POST', path: `${C}/:campaign_id/pause`, service: S, rpc: 'pauseCampaign', response: one, bodyType: 'none' },
  { method: 'POST', path: `${C}/:campaign_id/cancel`, service: S, rpc: 'cancelCampaign', response: one, bodyType: 'none' },
  {
    method: 'GET',
    path: `${C}/:campaign_id/calls`,
    service: S,
    rpc: 'listCampaignCalls',
    response: (json) => ({ data: { ...json, calls: ((json.calls ?? []) as unknown[]).map(restContact) } }),
  },
];
