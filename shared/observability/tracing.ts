/**
 * The process's OpenTelemetry tracer: off (no tracer at all, so calls create no spans) unless
 * OTEL_EXPORTER_OTLP_ENDPOINT is set; then a BasicTracerProvider batches spans to the OTLP/HTTP
 * exporter. Not registered as the global provider: the engine hands its tracer to each call, and
 * a library's own global spans are not ours to export.
 */
import type { Tracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';

export interface Tracing {
  /** Absent when tracing is off. */
  tracer?: Tracer;
  /** Exports what is buffered and stops (bounded by the exporter's timeout). */
  shutdown(): Promise<void>;
}

export interface TracingOptions {
  /** OTLP/HTTP base endpoint (`http://collector:4318`); spans go to `<endpoint>/v1/traces`. */
  endpoint?: string;
  serviceName: string;
  /** Tests: an exporter of their own (InMemorySpanExporter) instead of OTLP. */
  exporter?: SpanExporter;
}

export function startTracing(opts: TracingOptions): Tracing {
  if (!opts.endpoint && !opts.exporter) return { shutdown: async () => {} };
  const exporter = opts.exporter ?? new OTLPTraceExporter({ url: `${opts.endpoint!.replace(/\/+$/, '')}/v1/traces`, timeoutMillis: 10_000 });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: opts.serviceName }),
    // Bounded: beyond 2048 queued spans new ones are dropped, never buffered without limit.
    spanProcessors: [new BatchSpanProcessor(exporter, { maxQueueSize: 2048, maxExportBatchSize: 512, scheduledDelayMillis: 2000 })],
  });
  return { tracer: provider.getTracer('voiceplane'), shutdown: () => provider.shutdown() };
}
