/**
 * Looks a campaign's contacts up by number: a CSV upload skips numbers the campaign already has
 * (in an earlier upload, or earlier in the same file), so nobody is called twice by one campaign
 * (control-plane/campaigns/csv-import.ts). Not unique: campaigns of an earlier release may hold
 * duplicates already, and they stay.
 */
export const m0027_campaign_contacts_number = {
  version: 27,
  name: 'campaign_contacts_number',
  sql: /* sql */ `
set local lock_timeout = '15s';
create index campaign_contacts_number_idx on campaign_contacts (campaign_id, to_number);
`,
};
