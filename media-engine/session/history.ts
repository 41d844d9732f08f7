/** Moved to shared/agent/history.ts (the control plane's simulation tests run it too); the engine imports it from here. */
export * from '../../shared/agent/history.js';
