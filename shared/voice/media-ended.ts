/**
 * A carrier call's media ended on an engine node: the node tells the control plane on the
 * registry's bus (key: the call id), which checks the call a little later, after the carrier's own
 * final callback has had its chance (it names the carrier's duration), and ends it if nothing else
 * did (control-plane/telephony/stale.ts). Without it an inbound call whose carrier sends no status
 * callback stayed live, its record without call_id or status, until a read of the calls swept it.
 */
export const MEDIA_ENDED_TOPIC = 'telephony.media_ended';
/** The wait for the carrier's final callback before the call is ended as `session_ended`. */
export const MEDIA_ENDED_CHECK_DELAY_S = 10;
