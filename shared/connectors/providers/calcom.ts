/**
 * Cal.com API v2 (https://cal.com/docs/api-reference/v2): bearer API key; every endpoint pins
 * its own `cal-api-version` (slots 2024-09-04, bookings 2024-08-13): without it Cal.com answers
 * with an older response shape.
 */
import { accountId, type ProviderAdapter } from './types.js';

const SLOTS_VERSION = '2024-09-04';
const BOOKINGS_VERSION = '2024-08-13';
/** Slots handed back to the model: a voice agent reads a few, not a month of them. */
const MAX_SLOTS = 50;

export const calcom: ProviderAdapter = {
  id: 'calcom',
  defaultBaseUrl: 'https://api.cal.com',
  headers: (cred) => ({ authorization: `Bearer ${cred.api_key}` }),
  async verify({ http }) {
    const me = await http.request<{ data: { id: number; email?: string; username?: string } }>('/v2/me');
    return { accountLabel: me.data.email ?? me.data.username ?? `Cal.com user ${accountId(me.data.id, 'data.id')}` };
  },
  actions: {
    async list_free_slots({ http }, b) {
      const res = await http.request<{ data: Record<string, Array<{ start: string }>> }>('/v2/slots', {
        query: { eventTypeId: b.event_type_id, start: b.start, end: b.end, timeZone: b.time_zone },
        headers: { 'cal-api-version': SLOTS_VERSION },
      });
      const slots = Object.keys(res.data ?? {})
        .sort()
        .flatMap((day) => res.data[day]!.map((s) => s.start));
      return { slots: slots.slice(0, MAX_SLOTS), truncated: slots.length > MAX_SLOTS };
    },
    async book({ http }, b) {
      const res = await http.request<{ data: any }>('/v2/bookings', {
        method: 'POST',
        headers: { 'cal-api-version': BOOKINGS_VERSION },
        json: { start: b.start, eventTypeId: b.event_type_id, attendee: { name: b.name, email: b.email, timeZone: b.time_zone ?? 'UTC', phoneNumber: b.phone } },
      });
      const d = res.data;
      return { id: d.id, uid: d.uid, start: d.start, end: d.end, status: d.status };
    },
    async cancel_booking({ http }, b) {
      const res = await http.request<{ data: any }>(`/v2/bookings/${encodeURIComponent(b.booking_uid)}/cancel`, {
        method: 'POST',
        headers: { 'cal-api-version': BOOKINGS_VERSION },
        json: { cancellationReason: b.reason },
      });
      return { uid: res.data?.uid ?? b.booking_uid, status: res.data?.status ?? 'cancelled' };
    },
  },
};
