/** A real @grpc/grpc-js client built from proto/ with proto-loader (snake_case field names kept). */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const PROTO_DIR = path.resolve(import.meta.dirname, '../../proto');

type UnaryFn = (req: unknown, md: grpc.Metadata, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void;

export function grpcClient(port: number, service: string, file: string) {
  const def = protoLoader.loadSync(path.join(PROTO_DIR, file), {
    includeDirs: [PROTO_DIR],
    keepCase: true,
    longs: Number,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as { voiceplane: { v1: Record<string, grpc.ServiceClientConstructor> } };
  const Ctor = pkg.voiceplane.v1[service];
  const client = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & Record<string, UnaryFn>;
  return {
    client,
    /** Calls a unary method; resolves the response or rejects with the grpc ServiceError. */
    call<T = Record<string, unknown>>(method: string, req: unknown, token?: string): Promise<T> {
      const md = new grpc.Metadata();
      if (token) md.set('authorization', `Bearer ${token}`);
      return new Promise((resolve, reject) => {
        client[method](req, md, { deadline: Date.now() + 10_000 }, (err, res) => (err ? reject(err) : resolve(res as T)));
      });
    },
    close: () => client.close(),
  };
}
