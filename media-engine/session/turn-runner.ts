/** Moved to shared/agent/turn-runner.ts (the control plane's simulation tests run it too); the engine imports it from here. */
export * from '../../shared/agent/turn-runner.js';
