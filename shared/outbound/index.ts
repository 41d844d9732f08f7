/**
 * Outbound requests to tenant-controlled URLs (issue 11, defect 3). See NOTES.md.
 */
export { createOutboundClient, readBodyCapped, type OutboundClient, type OutboundClientOptions, type OutboundFetchInit } from './client.js';
export { findOutboundRefusal, isOutboundRefused, outboundRefused } from './errors.js';
export { createPolicyLookup, resolveAllowed, systemResolver, type Resolver, type ResolvedAddress } from './lookup.js';
export { createOutboundPolicy, isIpLiteral, parseAllowCidrs, refusalReason, type OutboundPolicy } from './policy.js';
export { assertRequestUrl, assertTenantUrl, HTTP_PROTOCOLS, urlProblem, WS_PROTOCOLS } from './url.js';
