/**
 * The connector catalog as DATA (spec doc 1, "Connector catalog entry"): validated against
 * catalog.ts's JSON Schema at start-up, so a bad edit stops the process with the path of the
 * problem. Adding a provider = one entry here + one adapter in providers/ (docs/connectors.md).
 * Bump `version` on every change a client could notice.
 *
 * `auth_kinds`: the doors the vendor offers (`api_key`, `oauth`); the public `auth_kind` is the
 * first. `oauth_available` is computed (no OAuth client is configured in this slice).
 */
const str = (description: string) => ({ type: 'string', minLength: 1, maxLength: 500, description });
const email = { type: 'string', format: 'email', maxLength: 254, description: 'Email address' };
const phone = { type: 'string', pattern: '^\\+?[0-9 ()-]{5,20}$', description: 'Phone number, E.164 preferred' };
const issueKey = { type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,19}-[0-9]{1,10}$', description: 'Issue key, e.g. OPS-12' };
const obj = (properties: Record<string, unknown>, required: string[]) => ({ type: 'object', properties, required, additionalProperties: false });

export const CATALOG_DATA = {
  version: 2,
  providers: [
    {
      id: 'google_workspace',
      name: 'Google Workspace',
      description: 'Calendar, Gmail and Sheets of a Google Workspace account.',
      auth_kinds: ['oauth'],
      credential_fields: [],
      products: ['calendar', 'mail', 'sheets'],
      actions: [
        { name: 'list_free_slots', product: 'calendar', description: 'Free time slots in the primary calendar between two instants.', parameters: obj({ start: str('ISO 8601 start'), end: str('ISO 8601 end'), duration_minutes: { type: 'integer', minimum: 5, maximum: 480 } }, ['start', 'end']) },
        { name: 'create_event', product: 'calendar', description: 'Create a calendar event and invite the attendee.', parameters: obj({ start: str('ISO 8601 start'), end: str('ISO 8601 end'), summary: str('Title'), attendee_email: email }, ['start', 'end', 'summary']) },
        { name: 'send_email', product: 'mail', description: 'Send an email from the connected mailbox.', parameters: obj({ to: email, subject: str('Subject'), body: { type: 'string', minLength: 1, maxLength: 20000 } }, ['to', 'subject', 'body']) },
        { name: 'append_row', product: 'sheets', description: 'Append a row to a sheet of a spreadsheet.', parameters: obj({ spreadsheet_id: str('Spreadsheet id'), sheet: str('Sheet title'), values: { type: 'array', maxItems: 100, items: { type: ['string', 'number', 'boolean'] } } }, ['spreadsheet_id', 'values']) },
      ],
    },
    {
      id: 'hubspot',
      name: 'HubSpot',
      description: 'HubSpot CRM: contacts, notes and deals.',
      auth_kinds: ['api_key', 'oauth'],
      credential_fields: [{ key: 'api_key', label: 'Private app access token', secret: true, help: 'Settings > Integrations > Private Apps; scopes crm.objects.contacts.read/write.', pattern: '^pat-[a-z0-9]+-[0-9a-f-]{20,}$', pattern_help: 'starts with pat-, e.g. pat-na1-…' }],
      products: ['crm'],
      actions: [
        { name: 'find_contact', product: 'crm', description: 'Find contacts by email or phone.', parameters: { type: 'object', properties: { email, phone }, minProperties: 1, additionalProperties: false } },
        { name: 'create_contact', product: 'crm', description: 'Create a contact.', parameters: obj({ email, phone, first_name: str('First name'), last_name: str('Last name') }, ['email']) },
        { name: 'create_note', product: 'crm', description: 'Add a note to a contact’s timeline.', parameters: obj({ contact_id: { type: 'string', pattern: '^[0-9]{1,20}$' }, body: { type: 'string', minLength: 1, maxLength: 65000 } }, ['contact_id', 'body']) },
        { name: 'create_deal', product: 'crm', description: 'Create a deal, optionally on a contact.', parameters: obj({ name: str('Deal name'), amount: { type: 'number', minimum: 0 }, contact_id: { type: 'string', pattern: '^[0-9]{1,20}$' } }, ['name']) },
      ],
    },
    {
      id: 'slack',
      name: 'Slack',
      description: 'Post messages to Slack channels.',
      auth_kinds: ['api_key', 'oauth'],
      credential_fields: [{ key: 'api_key', label: 'Bot token', secret: true, help: 'A bot token with chat:write.', pattern: '^xoxb-[A-Za-z0-9-]+$', pattern_help: 'starts with xoxb-' }],
      products: ['messaging'],
      actions: [
        { name: 'send_message', product: 'messaging', description: 'Post a message to a channel.', parameters: obj({ channel: str('Channel id or name'), text: { type: 'string', minLength: 1, maxLength: 4000 } }, ['channel', 'text']) },
        { name: 'list_channels', product: 'messaging', description: 'List public channels.', parameters: obj({}, []) },
        { name: 'find_user', product: 'messaging', description: 'Find a workspace member by email.', parameters: obj({ email }, ['email']) },
      ],
    },
    {
      id: 'calcom',
      name: 'Cal.com',
      description: 'Cal.com scheduling: free slots and bookings.',
      auth_kinds: ['api_key', 'oauth'],
      credential_fields: [{ key: 'api_key', label: 'API key', secret: true, help: 'Settings > Developer > API keys.', pattern: '^cal_(live|test)_[A-Za-z0-9]+$', pattern_help: 'starts with cal_live_ or cal_test_' }],
      products: ['scheduling'],
      actions: [
        { name: 'list_free_slots', product: 'scheduling', description: 'Bookable start times of an event type between two dates.', parameters: obj({ event_type_id: { type: 'integer', minimum: 1 }, start: str('ISO 8601 date or instant'), end: str('ISO 8601 date or instant'), time_zone: str('IANA time zone') }, ['event_type_id', 'start', 'end']) },
        { name: 'book', product: 'scheduling', description: 'Book a slot for the caller.', parameters: obj({ event_type_id: { type: 'integer', minimum: 1 }, start: str('UTC ISO 8601 start from list_free_slots'), name: str('Attendee name'), email, phone, time_zone: str('IANA time zone') }, ['event_type_id', 'start', 'name', 'email']) },
        { name: 'cancel_booking', product: 'scheduling', description: 'Cancel a booking by uid.', parameters: obj({ booking_uid: str('Booking uid'), reason: str('Why') }, ['booking_uid']) },
      ],
    },
    {
      id: 'jira',
      name: 'Jira',
      description: 'Jira Cloud issues.',
      auth_kinds: ['api_key', 'oauth'],
      credential_fields: [
        { key: 'site', label: 'Site', secret: false, help: 'your-company.atlassian.net', pattern: '^[a-z0-9][a-z0-9-]{0,62}\\.atlassian\\.net$', pattern_help: '<name>.atlassian.net' },
        { key: 'email', label: 'Account email', secret: false, help: 'The Atlassian account the token belongs to.' },
        { key: 'api_token', label: 'API token', secret: true, help: 'id.atlassian.com > Security > API tokens.' },
      ],
      products: ['issues'],
      actions: [
        { name: 'create_issue', product: 'issues', description: 'Create an issue.', parameters: obj({ project_key: { type: 'string', pattern: '^[A-Z][A-Z0-9_]{0,19}$', description: 'Project key, e.g. OPS' }, summary: str('Summary'), description: { type: 'string', maxLength: 20000 }, issue_type: { ...str('Issue type name (default Task)'), maxLength: 60 } }, ['project_key', 'summary']) },
        { name: 'find_issue', product: 'issues', description: 'Read an issue by key.', parameters: obj({ issue_key: issueKey }, ['issue_key']) },
        { name: 'add_comment', product: 'issues', description: 'Comment on an issue.', parameters: obj({ issue_key: issueKey, body: { type: 'string', minLength: 1, maxLength: 20000 } }, ['issue_key', 'body']) },
      ],
    },
    {
      id: 'pipedrive',
      name: 'Pipedrive',
      description: 'Pipedrive CRM: persons, deals and notes.',
      auth_kinds: ['api_key'],
      credential_fields: [{ key: 'api_key', label: 'API token', secret: true, help: 'Personal preferences > API.', pattern: '^[0-9a-f]{40}$', pattern_help: '40 hexadecimal characters' }],
      products: ['crm'],
      actions: [
        { name: 'find_person', product: 'crm', description: 'Find persons by email or phone.', parameters: obj({ term: { ...str('Email, phone or name (at least 2 characters)'), minLength: 2 } }, ['term']) },
        { name: 'create_person', product: 'crm', description: 'Create a person.', parameters: obj({ name: str('Name'), email, phone }, ['name']) },
        { name: 'create_deal', product: 'crm', description: 'Create a deal.', parameters: obj({ title: str('Title'), value: { type: 'number', minimum: 0 }, person_id: { type: 'integer', minimum: 1 } }, ['title']) },
      ],
    },
    {
      id: 'twilio',
      name: 'Twilio',
      description: 'Twilio messaging from your own account.',
      auth_kinds: ['api_key'],
      credential_fields: [
        { key: 'account_sid', label: 'Account SID', secret: false, help: 'Console dashboard.', pattern: '^AC[0-9a-f]{32}$', pattern_help: 'AC followed by 32 hexadecimal characters' },
        { key: 'auth_token', label: 'Auth token', secret: true, help: 'Console dashboard.' },
        { key: 'from_number', label: 'From number', secret: false, help: 'A number of the account, E.164.', pattern: '^\\+[1-9][0-9]{6,14}$', pattern_help: 'E.164, e.g. +14155550100' },
      ],
      products: ['messaging'],
      actions: [
        { name: 'send_sms', product: 'messaging', description: 'Send an SMS from the connected number.', parameters: obj({ to: phone, body: { type: 'string', minLength: 1, maxLength: 1600 } }, ['to', 'body']) },
        { name: 'lookup_number', product: 'messaging', description: 'Look up a phone number.', parameters: obj({ number: phone }, ['number']) },
        { name: 'list_messages', product: 'messaging', description: 'Recent messages to a number.', parameters: obj({ to: phone }, ['to']) },
      ],
    },
    {
      id: 'stripe',
      name: 'Stripe',
      description: 'Stripe payments: customers and payment links.',
      auth_kinds: ['api_key'],
      credential_fields: [{ key: 'api_key', label: 'Secret or restricted key', secret: true, help: 'Developers > API keys; a restricted key needs customers and payment links write.', pattern: '^(sk|rk)_(live|test)_[A-Za-z0-9]+$', pattern_help: 'starts with sk_live_, sk_test_, rk_live_ or rk_test_' }],
      products: ['payments'],
      actions: [
        { name: 'find_customer', product: 'payments', description: 'Find customers by email.', parameters: obj({ email }, ['email']) },
        { name: 'create_customer', product: 'payments', description: 'Create a customer.', parameters: obj({ email, name: str('Name'), phone }, ['email']) },
        { name: 'create_payment_link', product: 'payments', description: 'Create a payment link for an amount.', parameters: obj({ amount: { type: 'integer', minimum: 1, maximum: 99999999, description: 'Minor units (cents)' }, currency: { type: 'string', pattern: '^[a-z]{3}$' }, product_name: str('What is paid for'), quantity: { type: 'integer', minimum: 1, maximum: 100 } }, ['amount', 'currency', 'product_name']) },
      ],
    },
    {
      id: 'zendesk',
      name: 'Zendesk',
      description: 'Zendesk Support tickets.',
      auth_kinds: ['api_key'],
      credential_fields: [
        { key: 'subdomain', label: 'Subdomain', secret: false, help: 'The <subdomain> of <subdomain>.zendesk.com.', pattern: '^[a-z0-9][a-z0-9-]{0,62}$', pattern_help: 'letters, digits and dashes' },
        { key: 'email', label: 'Agent email', secret: false, help: 'The agent the token acts as.' },
        { key: 'api_token', label: 'API token', secret: true, help: 'Admin Center > Apps and integrations > Zendesk API.' },
      ],
      products: ['helpdesk'],
      actions: [
        { name: 'create_ticket', product: 'helpdesk', description: 'Open a ticket for the caller.', parameters: obj({ subject: str('Subject'), body: { type: 'string', minLength: 1, maxLength: 65000 }, requester_name: str('Requester name'), requester_email: email, priority: { enum: ['low', 'normal', 'high', 'urgent'] } }, ['subject', 'body']) },
        { name: 'find_ticket', product: 'helpdesk', description: 'Read a ticket by id.', parameters: obj({ ticket_id: { type: 'integer', minimum: 1 } }, ['ticket_id']) },
        { name: 'add_comment', product: 'helpdesk', description: 'Add a comment to a ticket.', parameters: obj({ ticket_id: { type: 'integer', minimum: 1 }, body: { type: 'string', minLength: 1, maxLength: 65000 }, public: { type: 'boolean' } }, ['ticket_id', 'body']) },
      ],
    },
    {
      id: 'freshdesk',
      name: 'Freshdesk',
      description: 'Freshdesk tickets.',
      auth_kinds: ['api_key'],
      credential_fields: [
        { key: 'domain', label: 'Domain', secret: false, help: '<name>.freshdesk.com', pattern: '^[a-z0-9][a-z0-9-]{0,62}\\.freshdesk\\.com$', pattern_help: '<name>.freshdesk.com' },
        { key: 'api_key', label: 'API key', secret: true, help: 'Profile settings > API key.' },
      ],
      products: ['helpdesk'],
      actions: [
        { name: 'create_ticket', product: 'helpdesk', description: 'Open a ticket.', parameters: obj({ subject: str('Subject'), description: { type: 'string', minLength: 1, maxLength: 65000 }, email, priority: { enum: ['low', 'medium', 'high', 'urgent'] } }, ['subject', 'description', 'email']) },
        { name: 'find_ticket', product: 'helpdesk', description: 'Read a ticket by id.', parameters: obj({ ticket_id: { type: 'integer', minimum: 1 } }, ['ticket_id']) },
        { name: 'add_note', product: 'helpdesk', description: 'Add a note to a ticket (private unless private is false).', parameters: obj({ ticket_id: { type: 'integer', minimum: 1 }, body: { type: 'string', minLength: 1, maxLength: 65000 }, private: { type: 'boolean' } }, ['ticket_id', 'body']) },
      ],
    },
    {
      id: 'servicenow',
      name: 'ServiceNow',
      description: 'ServiceNow incidents.',
      auth_kinds: ['api_key'],
      credential_fields: [
        { key: 'instance', label: 'Instance', secret: false, help: 'The <instance> of <instance>.service-now.com.', pattern: '^[a-z0-9][a-z0-9-]{0,62}$', pattern_help: 'letters, digits and dashes' },
        { key: 'username', label: 'Username', secret: false, help: 'An integration user.' },
        { key: 'password', label: 'Password', secret: true, help: 'That user’s password.' },
      ],
      products: ['itsm'],
      actions: [
        { name: 'create_incident', product: 'itsm', description: 'Open an incident.', parameters: obj({ short_description: str('Summary'), description: { type: 'string', maxLength: 20000 }, urgency: { enum: ['1', '2', '3'] } }, ['short_description']) },
        { name: 'find_incident', product: 'itsm', description: 'Read an incident by number.', parameters: obj({ number: { type: 'string', pattern: '^[A-Z]{2,8}[0-9]{1,20}$', description: 'Incident number, e.g. INC0010001' } }, ['number']) },
        { name: 'add_work_note', product: 'itsm', description: 'Add a work note to an incident.', parameters: obj({ sys_id: { type: 'string', pattern: '^[0-9a-f]{32}$', description: 'Incident sys_id (from find_incident)' }, note: { type: 'string', minLength: 1, maxLength: 20000 } }, ['sys_id', 'note']) },
      ],
    },
  ],
};
