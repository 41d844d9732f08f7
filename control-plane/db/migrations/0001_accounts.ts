export const m0001_accounts = {
  version: 1,
  name: 'accounts',
  sql: /* sql */ `
create table users (
  id uuid primary key,
  email text not null,
  password_hash text not null,
  first_name text not null default '',
  last_name text not null default '',
  email_verified_at timestamptz,
  -- the organization owner (ORG_API_KEY) is a real user row so ownership joins stay uniform
  is_org_owner boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));
create unique index users_one_org_owner on users (is_org_owner) where is_org_owner;

create table otp_codes (
  id uuid primary key,
  user_id uuid not null references users(id) on delete cascade,
  code_hash text not null,
  expires_at timestamptz not null,
  attempts integer not null default 0,
  consumed_at timestamptz,
  created_at timestamptz not null default now()
);
create index otp_codes_user_idx on otp_codes (user_id, created_at desc);

-- one row per login (verify-otp or login): the refresh-token family. Access tokens carry its id
-- (claim sid), so revoking a session (refresh-token reuse) also ends its access tokens.
create table sessions (
  id uuid primary key,
  user_id uuid not null references users(id) on delete cascade,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index sessions_user_idx on sessions (user_id);

create table refresh_tokens (
  id uuid primary key,
  user_id uuid not null references users(id) on delete cascade,
  family_id uuid not null references sessions(id) on delete cascade,
  token_hash text not null unique,
  expires_at timestamptz not null,
  used_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index refresh_tokens_family_idx on refresh_tokens (family_id);

create table api_keys (
  id uuid primary key,
  user_id uuid not null references users(id) on delete cascade,
  name text not null,
  prefix text not null,
  key_hash text not null unique,
  scopes text[] not null default '{}',
  is_org_key boolean not null default false,
  last_used_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index api_keys_user_idx on api_keys (user_id, created_at desc);
-- at most one live organization key (ORG_API_KEY)
create unique index api_keys_one_org_key on api_keys (is_org_key) where is_org_key and revoked_at is null;

create table workspaces (
  id uuid primary key,
  user_id uuid not null references users(id) on delete cascade,
  name text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index workspaces_user_idx on workspaces (user_id, created_at);

create table workspace_members (
  workspace_id uuid not null references workspaces(id) on delete cascade,
  user_id uuid not null references users(id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'manager', 'member')),
  created_at timestamptz not null default now(),
  primary key (workspace_id, user_id)
);
create index workspace_members_user_idx on workspace_members (user_id);

create table memory_items (
  id uuid primary key,
  workspace_id uuid not null references workspaces(id) on delete cascade,
  title text not null,
  content text not null,
  content_type text not null default 'text/plain',
  metadata jsonb not null default '{}',
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index memory_items_ws_idx on memory_items (workspace_id, created_at);
`,
};
