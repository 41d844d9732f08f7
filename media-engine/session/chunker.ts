/** Moved to shared/agent/chunker.ts (the control plane's simulation tests run it too); the engine imports it from here. */
export * from '../../shared/agent/chunker.js';
