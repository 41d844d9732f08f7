import { writeFileSync } from 'node:fs';
import type { Reporter, SerializedError, TestCase, TestModule } from 'vitest/node';

/**
 * Names the test files (and the test inside each) that started and never reported an end. When a
 * fork dies under a file (a native crash, an OOM kill), vitest prints only "Worker exited
 * unexpectedly" with no file; this prints where it happened as the run's last lines, which are
 * the lines a CI log keeps.
 *
 * With VITEST_RUN_SUMMARY set to a path it also writes what .ci/run needs to decide whether a
 * failed run failed only by dead workers: `{ unfinished, failed, otherErrors }`.
 */
export default class UnfinishedReporter implements Reporter {
  private readonly running = new Map<string, { module: TestModule; startedAt: number; cases: Set<string> }>();

  onTestModuleStart(module: TestModule): void {
    this.running.set(module.moduleId, { module, startedAt: Date.now(), cases: new Set() });
  }

  onTestModuleEnd(module: TestModule): void {
    this.running.delete(module.moduleId);
  }

  onTestCaseReady(test: TestCase): void {
    this.running.get(test.module.moduleId)?.cases.add(test.fullName);
  }

  onTestCaseResult(test: TestCase): void {
    this.running.get(test.module.moduleId)?.cases.delete(test.fullName);
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<SerializedError>): void {
    const unfinished = [...this.running.values()];
    if (unfinished.length) {
      const lines = ['', 'Test files that started and never finished (their worker exited or the run was cut short):'];
      for (const { module, startedAt, cases } of unfinished) {
        lines.push(`  ${module.relativeModuleId} (started ${Math.round((Date.now() - startedAt) / 1000)} s before the end)`);
        for (const name of cases) lines.push(`    still running: ${name}`);
      }
      process.stderr.write(`${lines.join('\n')}\n`);
    }
    const summaryPath = process.env.VITEST_RUN_SUMMARY;
    if (!summaryPath) return;
    const unfinishedIds = new Set(unfinished.map((u) => u.module.moduleId));
    const summary = {
      unfinished: unfinished.map((u) => u.module.relativeModuleId),
      failed: modules.filter((m) => !unfinishedIds.has(m.moduleId) && m.state() === 'failed').map((m) => m.relativeModuleId),
      otherErrors: errors.filter((e) => !isWorkerExit(e)).length,
    };
    writeFileSync(summaryPath, JSON.stringify(summary));
  }
}

function isWorkerExit(e: SerializedError | undefined): boolean {
  for (let err = e, depth = 0; err && depth < 5; err = err.cause, depth++) if (/Worker exited unexpectedly/.test(err.message ?? '')) return true;
  return false;
}
