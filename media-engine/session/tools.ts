/** Moved to shared/agent/tools.ts (the control plane's simulation tests run it too); the engine imports it from here. */
export * from '../../shared/agent/tools.js';
