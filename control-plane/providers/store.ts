/** SQL of the provider registry: `provider_definitions` and `user_provider_configs`. */
import type { JsonObject } from '@bufbuild/protobuf';
import type { Sql } from '../../shared/db/client.js';
import { run } from '../agents/db.js';
import type { ProviderType } from '../agents/types.js';
import type { Page } from '../http/pagination.js';

export interface DefinitionRow {
  id: string;
  name: string;
  provider_type: ProviderType;
  description: string;
  base_url: string;
  auth_type: string;
  is_active: boolean;
  default_config: JsonObject;
  supported_models: string[];
  supported_languages: string[];
  created_at: Date;
  updated_at: Date;
}

export interface UserConfigRow {
  id: string;
  user_id: string;
  agent_id: string | null;
  provider_id: string;
  provider_type: ProviderType;
  api_key_enc: string | null;
  model_name: string;
  config: JsonObject;
  is_default: boolean;
  created_at: Date;
  updated_at: Date;
  /** Joined from the definition. */
  provider_name: string;
  base_url: string;
  default_config: JsonObject;
  supported_models: string[];
}

/** Configurations per user: enforced by the database (migration 0004); documented here. */
export const MAX_USER_CONFIGS = 200;

/** One page of the registry (optionally one type) and the total. */
export async function listDefinitionRows(
  sql: Sql,
  type: ProviderType | undefined,
  page: Page,
  signal?: AbortSignal,
): Promise<{ rows: DefinitionRow[]; total: number }> {
  const t = type ?? null;
  const [rows, [{ n }]] = await Promise.all([
    run(
      sql<DefinitionRow[]>`select * from provider_definitions where (${t}::text is null or provider_type = ${t})
        order by provider_type, name, created_at, id limit ${page.limit} offset ${page.offset}`,
      signal,
    ),
    run(sql<{ n: number }[]>`select count(*)::int as n from provider_definitions where (${t}::text is null or provider_type = ${t})`, signal),
  ]);
  return { rows, total: n };
}

export async function getDefinitionRow(sql: Sql, id: string, signal?: AbortSignal): Promise<DefinitionRow | undefined> {
  const rows = await run(sql<DefinitionRow[]>`select * from provider_definitions where id = ${id}`, signal);
  return rows[0];
}

export async function definitionByName(sql: Sql, name: string, type: ProviderType, signal?: AbortSignal): Promise<DefinitionRow | undefined> {
  const rows = await run(sql<DefinitionRow[]>`select * from provider_definitions where lower(name) = lower(${name}) and provider_type = ${type}`, signal);
  return rows[0];
}

export async function insertDefinitionRow(sql: Sql, d: Omit<DefinitionRow, 'created_at' | 'updated_at'>, signal?: AbortSignal): Promise<DefinitionRow> {
  const rows = await run(
    sql<DefinitionRow[]>`
      insert into provider_definitions (id, name, provider_type, description, base_url, auth_type, is_active, default_config,
        supported_models, supported_languages)
      values (${d.id}, ${d.name}, ${d.provider_type}, ${d.description}, ${d.base_url}, ${d.auth_type}, ${d.is_active},
        ${sql.json(d.default_config)}::jsonb, ${d.supported_models}::text[], ${d.supported_languages}::text[])
      returning *`,
    signal,
  );
  return rows[0];
}

/** The registry default of a type: an active definition flagged `default_config.is_default`, else the oldest active one. */
export async function registryDefault(sql: Sql, type: ProviderType, signal?: AbortSignal): Promise<DefinitionRow | undefined> {
  const rows = await run(
    sql<DefinitionRow[]>`select * from provider_definitions where provider_type = ${type} and is_active
      order by coalesce((default_config->>'is_default')::boolean, false) desc, created_at, id limit 1`,
    signal,
  );
  return rows[0];
}

const USER_CONFIG_SELECT = `select c.*, d.name as provider_name, d.base_url, d.default_config, d.supported_models
  from user_provider_configs c join provider_definitions d on d.id = c.provider_id`;

/** One page of the user's configurations and the total. */
export async function listUserConfigRows(sql: Sql, userId: string, page: Page, signal?: AbortSignal): Promise<{ rows: UserConfigRow[]; total: number }> {
  const [rows, [{ n }]] = await Promise.all([
    run(
      sql.unsafe<UserConfigRow[]>(`${USER_CONFIG_SELECT} where c.user_id = $1 order by c.created_at, c.id limit $2 offset $3`, [userId, page.limit, page.offset]),
      signal,
    ),
    run(sql<{ n: number }[]>`select count(*)::int as n from user_provider_configs where user_id = ${userId}`, signal),
  ]);
  return { rows, total: n };
}

export async function getUserConfigRow(sql: Sql, id: string, signal?: AbortSignal): Promise<UserConfigRow | undefined> {
  const rows = await run(sql.unsafe<UserConfigRow[]>(`${USER_CONFIG_SELECT} where c.id = $1`, [id]), signal);
  return rows[0];
}

export async function findUserConfigRow(sql: Sql, userId: string, providerId: string, agentId: string | null, signal?: AbortSignal): Promise<UserConfigRow | undefined> {
  const rows = await run(
    sql.unsafe<UserConfigRow[]>(
      `${USER_CONFIG_SELECT} where c.user_id = $1 and c.provider_id = $2 and c.agent_id is not distinct from $3::uuid`,
      [userId, providerId, agentId] as never,
    ),
    signal,
  );
  return rows[0];
}

/**
 * Creates or replaces the user's configuration of (provider, agent scope). A new default clears
 * the previous default of the same type in the same transaction (one default per user and type).
 */
export async function saveUserConfigRow(
  sql: Sql,
  c: Omit<UserConfigRow, 'created_at' | 'updated_at' | 'provider_name' | 'base_url' | 'default_config' | 'supported_models'>,
): Promise<string> {
  return sql.begin(async (tx) => {
    // The user's saves one at a time, on the lock the row-limit trigger takes at the insert:
    // taken there, after this update, two saves of new defaults deadlocked (lock vs default index).
    await tx`select pg_advisory_xact_lock(hashtextextended(${'user_provider_configs:' + c.user_id}, 0))`;
    if (c.is_default && c.agent_id === null) {
      await tx`update user_provider_configs set is_default = false, updated_at = now()
        where user_id = ${c.user_id} and provider_type = ${c.provider_type} and agent_id is null and is_default and id <> ${c.id}`;
    }
    const [r] = await tx<{ id: string }[]>`
      insert into user_provider_configs (id, user_id, agent_id, provider_id, provider_type, api_key_enc, model_name, config, is_default)
      values (${c.id}, ${c.user_id}, ${c.agent_id}, ${c.provider_id}, ${c.provider_type}, ${c.api_key_enc}, ${c.model_name},
        ${tx.json(c.config)}::jsonb, ${c.is_default})
      on conflict (id) do update set api_key_enc = excluded.api_key_enc, model_name = excluded.model_name,
        config = excluded.config, is_default = excluded.is_default, provider_type = excluded.provider_type, updated_at = now()
      returning id`;
    return r.id;
  }) as Promise<string>;
}

/**
 * The configuration for an agent and type: one bound to the agent (by whoever may edit it; newest
 * first), else the owner's user-level default of the type. For an agent, only configurations of
 * users still in its workspace (or the organization owner) count: a removed member's personal key
 * must not keep serving the workspace, and nobody left could see or replace it.
 */
export async function userConfigFor(
  sql: Sql,
  userId: string,
  agentId: string | undefined,
  type: ProviderType,
  signal?: AbortSignal,
): Promise<UserConfigRow | undefined> {
  const rows = await run(
    sql.unsafe<UserConfigRow[]>(
      `${USER_CONFIG_SELECT}
       where c.provider_type = $2 and d.is_active
         and ((c.agent_id = $3::uuid) or (c.agent_id is null and c.is_default and c.user_id = $1))
         and ($3::uuid is null
           or exists (select 1 from users u where u.id = c.user_id and u.is_org_owner)
           or exists (select 1 from agents a join workspace_members m on m.workspace_id = a.workspace_id and m.user_id = c.user_id where a.id = $3::uuid))
       order by (c.agent_id is not null) desc, c.updated_at desc limit 1`,
      [userId, type, agentId ?? null] as never,
    ),
    signal,
  );
  return rows[0];
}
