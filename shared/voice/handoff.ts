/**
 * The portal hand-off request of a carrier call (issue 21, docs/portal.md "Hand-off"): the engine
 * publishes it on the registry's invalidation bus with the call id as key; the control plane's
 * portal domain turns it into one `portal.handoff` job per call. Best effort like every notice on
 * that bus: a lost one leaves the caller with the AI (the tool result told it to keep them on).
 */
export const HANDOFF_TOPIC = 'portal.handoff';
