# syntax=docker/dockerfile:1
# One image for every role (docs/operations.md):
#   control plane:  node dist/control-plane/main.js        (ROLE=control-plane)
#   engine node:    node dist/media-engine/main.js         (ROLE=media-engine: only picks the health-check port)
#   single node:    node dist/main.js                      (ROLE=all, embedded database when DATABASE_URL is unset)
# Kept in sync with shared/config.ts by test/unit/ops/deploy-artefacts.test.ts.
ARG NODE_IMAGE=node:20-bookworm-slim

# --- build: dev dependencies and the TypeScript compiler, then dist/
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# postinstall applies patches/ (patch-package); the postgres.js fix there is needed at run time.
COPY patches ./patches
RUN npm ci
COPY tsconfig.json tsconfig.build.json main.ts ./
COPY control-plane ./control-plane
COPY media-engine ./media-engine
COPY shared ./shared
COPY console ./console
RUN npm run build

# --- production dependencies only (native modules built for this base image)
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY patches ./patches
RUN npm ci --omit=dev && npm cache clean --force

# --- runtime: non-root, no compiler, no sources
FROM ${NODE_IMAGE}
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    HTTP_PORT=8080 \
    ENGINE_PORT=8081 \
    DATA_DIR=/data \
    ROLE=control-plane
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 8080 8081
# /live: the process serves (the orchestrator restarts it otherwise); /ready is for load balancers.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const p = process.env.ROLE === 'media-engine' ? process.env.ENGINE_PORT : process.env.HTTP_PORT; fetch('http://127.0.0.1:' + p + '/live').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM drains an engine node (DRAIN_TIMEOUT_S); give the container at least that long to stop.
STOPSIGNAL SIGTERM
CMD ["node", "dist/control-plane/main.js"]
