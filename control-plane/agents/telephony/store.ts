/** SQL of `agent_telephony` (the draft binding; the phone number is unique platform-wide). */
import type { Sql, SqlOrTx } from '../../../shared/db/client.js';
import { run } from '../db.js';
import type { TelephonyRow } from '../types.js';

export async function getTelephonyRow(sql: SqlOrTx, agentId: string, signal?: AbortSignal): Promise<TelephonyRow | undefined> {
  const rows = await run(sql<TelephonyRow[]>`select * from agent_telephony where agent_id = ${agentId}`, signal);
  return rows[0];
}

export async function telephonyByNumber(sql: Sql, e164: string, signal?: AbortSignal): Promise<TelephonyRow | undefined> {
  const rows = await run(sql<TelephonyRow[]>`select * from agent_telephony where carrier_phone_number = ${e164}`, signal);
  return rows[0];
}

export type TelephonyWrite = Omit<TelephonyRow, 'created_at' | 'updated_at'>;

/** Writes the complete binding (the handler merged the request into the stored one). */
export async function upsertTelephonyRow(sql: SqlOrTx, t: TelephonyWrite, signal?: AbortSignal): Promise<TelephonyRow> {
  const rows = await run(
    sql<TelephonyRow[]>`
      insert into agent_telephony (agent_id, carrier_phone_number, carrier_account_sid, carrier_auth_token_enc, call_direction,
        webhook_url, human_transfer_number, human_transfer_mode, panel_project_id, transcribe_human_segment, generate_call_summary)
      values (${t.agent_id}, ${t.carrier_phone_number}, ${t.carrier_account_sid}, ${t.carrier_auth_token_enc}, ${t.call_direction},
        ${t.webhook_url}, ${t.human_transfer_number}, ${t.human_transfer_mode}, ${t.panel_project_id},
        ${t.transcribe_human_segment}, ${t.generate_call_summary})
      on conflict (agent_id) do update set
        carrier_phone_number = excluded.carrier_phone_number, carrier_account_sid = excluded.carrier_account_sid,
        carrier_auth_token_enc = excluded.carrier_auth_token_enc, call_direction = excluded.call_direction,
        webhook_url = excluded.webhook_url, human_transfer_number = excluded.human_transfer_number,
        human_transfer_mode = excluded.human_transfer_mode, panel_project_id = excluded.panel_project_id,
        transcribe_human_segment = excluded.transcribe_human_segment, generate_call_summary = excluded.generate_call_summary,
        updated_at = now()
      returning *`,
    signal,
  );
  return rows[0];
}
