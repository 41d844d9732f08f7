/**
 * Count limits enforced atomically in the database (issue 11, "limits race").
 *
 * The services used to count and then insert, so parallel creates all saw room and all inserted
 * (200 parallel tool creates stored 200 with a limit of 128). One trigger function now guards
 * every count-limited table: before each insert it takes a transaction-scoped advisory lock on
 * (table, parent id), then counts. Writers for the same parent queue on the lock until the
 * previous one commits, and Postgres makes the committed row visible before it releases the
 * lock, so each count sees every earlier insert (READ COMMITTED takes a new snapshot per
 * statement inside the function). Writers for different parents never wait for each other.
 *
 * Why a trigger: it also covers inserts that are not the route's own (connector tools added by
 * `PUT /agents/{id}` with `connectors`, and every future path), with no lock code in the services.
 * A limit that is full raises SQLSTATE VPL01, which `toAppError` (shared/errors.ts) maps to
 * 409 LIMIT_REACHED with the message below.
 *
 * Arguments: parent column, maximum, what (for the message), optional "same row" column (an
 * upsert that updates an existing row of the parent does not add one), optional filter (rows
 * that count, e.g. active API keys only; trusted SQL written here).
 * Changing a limit means a new migration that re-creates its trigger (and the constant the
 * service documents it with).
 */
export const m0004_hardening = {
  version: 4,
  name: 'hardening',
  sql: /* sql */ `
create function vp_enforce_row_limit() returns trigger language plpgsql as $fn$
declare
  parent_col text := tg_argv[0];
  max_rows integer := tg_argv[1]::integer;
  what text := tg_argv[2];
  same_col text := nullif(tg_argv[3], '');
  counted text := coalesce(nullif(tg_argv[4], ''), 'true');
  parent text;
  already boolean;
  n integer;
begin
  execute format('select ($1).%I::text', parent_col) into parent using new;
  if parent is null then
    return new;
  end if;
  perform pg_advisory_xact_lock(hashtextextended(tg_table_name || ':' || parent, 0));
  if same_col is not null then
    execute format('select exists (select 1 from %I.%I where %I = ($1).%I and %I = ($1).%I)',
      tg_table_schema, tg_table_name, parent_col, parent_col, same_col, same_col) into already using new;
    if already then
      return new;
    end if;
  end if;
  execute format('select count(*) from %I.%I where %I = ($1).%I and (%s)',
    tg_table_schema, tg_table_name, parent_col, parent_col, counted) into n using new;
  if n >= max_rows then
    raise exception using errcode = 'VPL01', message = format('limit reached: at most %s %s', max_rows, what);
  end if;
  return new;
end
$fn$;

-- tools per agent (TOOL_LIMITS.toolsPerAgent)
create trigger agent_tools_limit before insert on agent_tools
  for each row execute function vp_enforce_row_limit('agent_id', '128', 'tools per agent');

-- knowledge-base bindings per agent (MAX_KB_BINDINGS); re-binding the same item is an update
create trigger agent_knowledge_bases_limit before insert on agent_knowledge_bases
  for each row execute function vp_enforce_row_limit('agent_id', '100', 'knowledge bases per agent', 'knowledge_base_id');

-- provider configurations per user (MAX_USER_CONFIGS); saving an existing one is an update
create trigger user_provider_configs_limit before insert on user_provider_configs
  for each row execute function vp_enforce_row_limit('user_id', '200', 'provider configurations per user', 'id');

-- active API keys per user (MAX_KEYS_PER_USER)
create trigger api_keys_limit before insert on api_keys
  for each row execute function vp_enforce_row_limit('user_id', '100', 'active API keys per user; revoke one first', '', 'revoked_at is null');

-- workspaces per owner (MAX_OWNED_WORKSPACES)
create trigger workspaces_limit before insert on workspaces
  for each row execute function vp_enforce_row_limit('user_id', '100', 'workspaces per owner');

-- members per workspace (MAX_MEMBERS_PER_WORKSPACE); changing a member's role is an update
create trigger workspace_members_limit before insert on workspace_members
  for each row execute function vp_enforce_row_limit('workspace_id', '1000', 'members per workspace', 'user_id');

-- memory items per workspace (MAX_ITEMS_PER_WORKSPACE)
create trigger memory_items_limit before insert on memory_items
  for each row execute function vp_enforce_row_limit('workspace_id', '10000', 'memory items per workspace');
`,
};
