/**
 * The same-run gRPC baseline (issue 13), in its own process (forked by bench/grpc.ts): a bare
 * `@grpc/grpc-js` server answering each captured unary method with the exact response bytes the
 * control plane answered. Pass-through serializers: no decode, no auth, no database, no logging,
 * only what a grpc-js server must do per call.
 */
import * as grpc from '@grpc/grpc-js';
import { serveParent } from './lib/child.js';
import { ProcessWindow } from './lib/proc-stats.js';

export interface BareInit {
  /** Full method path (`/voiceplane.v1.AgentService/GetAgent`) -> response message bytes, base64. */
  responses: Record<string, string>;
}

let server: grpc.Server | undefined;
const win = new ProcessWindow(10);
const same = (b: Buffer): Buffer => b;

async function init(p: BareInit): Promise<{ port: number }> {
  server = new grpc.Server();
  const byService = new Map<string, Array<[string, Buffer]>>();
  for (const [path, b64] of Object.entries(p.responses)) {
    const [, service, method] = path.split('/');
    if (!service || !method) throw new Error(`bad method path ${path}`);
    byService.set(service, [...(byService.get(service) ?? []), [method, Buffer.from(b64, 'base64')]]);
  }
  for (const [service, methods] of byService) {
    const def: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [method, bytes] of methods) {
      def[method] = { path: `/${service}/${method}`, requestStream: false, responseStream: false, requestSerialize: same, requestDeserialize: same, responseSerialize: same, responseDeserialize: same };
      impl[method] = ((_call: unknown, cb: grpc.sendUnaryData<Buffer>) => cb(null, bytes)) as grpc.handleUnaryCall<Buffer, Buffer>;
    }
    server.addService(def as grpc.ServiceDefinition, impl);
  }
  const port = await new Promise<number>((resolve, reject) =>
    server!.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
  );
  return { port };
}

serveParent(
  {
    init,
    resetWindow: () => {
      win.reset();
      return true;
    },
    snapshot: () => win.read(),
  },
  () => new Promise<void>((resolve) => (server ? server.tryShutdown(() => resolve()) : resolve())),
);
