/**
 * Cal.com API v2 fake: /v2/me, slots (cal-api-version 2024-09-04: `{status, data: {day: [{start}]}}`)
 * and bookings (2024-08-13). A request without the version header gets the older shape's 400,
 * as Cal.com would answer with a different contract. A booked slot disappears from the slots.
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

export class CalcomFake extends VendorFake {
  /** Event type id -> free slot starts (UTC ISO). */
  readonly slots = new Map<number, string[]>();
  readonly bookings: any[] = [];
  private nextId = 7001;

  protected credentialOf(rec: HttpRecord) {
    return this.bearer(rec);
  }

  protected override unauthorizedMessage() {
    return 'Invalid API Key';
  }

  protected errorBody(status: number, message: string) {
    const code = status === 401 ? 'UnauthorizedException' : status === 404 ? 'NotFoundException' : status === 400 ? 'BadRequestException' : status === 429 ? 'ThrottlerException' : 'InternalServerErrorException';
    return { status: 'error', timestamp: new Date().toISOString(), error: { code, message } };
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const at = `${rec.method} ${rec.path}`;
    const version = rec.headers['cal-api-version'];
    if (at === 'GET /v2/me') return this.sendJson(rec, res, 200, { status: 'success', data: { id: 42, username: 'dr-lee', email: 'lee@clinic.example', timeZone: 'Europe/London' } });
    if (at === 'GET /v2/slots') {
      if (version !== '2024-09-04') return this.fail(rec, res, 400, 'cal-api-version 2024-09-04 is required for this response shape');
      const free = this.slots.get(Number(rec.query.get('eventTypeId')));
      if (!free) return this.fail(rec, res, 404, 'Event type not found');
      const data: Record<string, Array<{ start: string }>> = {};
      for (const s of free) (data[s.slice(0, 10)] ??= []).push({ start: s });
      return this.sendJson(rec, res, 200, { status: 'success', data });
    }
    if (at === 'POST /v2/bookings') {
      if (version !== '2024-08-13') return this.fail(rec, res, 400, 'cal-api-version 2024-08-13 is required');
      const b = rec.body ?? {};
      const free = this.slots.get(Number(b.eventTypeId));
      if (!free) return this.fail(rec, res, 404, 'Event type not found');
      if (!b.attendee?.name || !b.attendee?.email || !b.attendee?.timeZone) return this.fail(rec, res, 400, 'attendee name, email and timeZone are required');
      const i = free.indexOf(b.start);
      if (i < 0) return this.fail(rec, res, 400, 'User either already has booking at this time or is not available');
      free.splice(i, 1);
      const booking = { id: this.nextId++, uid: `bk_${this.nextId}`, title: 'Consultation', status: 'accepted', start: b.start, end: new Date(Date.parse(b.start) + 30 * 60_000).toISOString(), eventTypeId: b.eventTypeId, attendees: [b.attendee] };
      this.bookings.push(booking);
      return this.sendJson(rec, res, 201, { status: 'success', data: booking });
    }
    const m = /^POST \/v2\/bookings\/([^/]+)\/cancel$/.exec(at);
    if (m) {
      const booking = this.bookings.find((x) => x.uid === decodeURIComponent(m[1]!));
      if (!booking) return this.fail(rec, res, 404, 'Booking not found');
      booking.status = 'cancelled';
      return this.sendJson(rec, res, 200, { status: 'success', data: booking });
    }
    return this.fail(rec, res, 404, `Cannot ${at}`);
  }
}
