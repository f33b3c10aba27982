# syntax=docker/dockerfile:1
# toolsift image: the API by default, the embedding worker with `node dist/src/worker.js`.
# The steps are the ones CI runs (`npm ci`, `npm run build`), so an image builds what CI tested.
# The default model (USE Lite) ships inside an npm dependency: the image needs nothing else.
ARG NODE_IMAGE=node:20.19-bookworm-slim

# All dependencies, dev ones included: tsc lives there.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
# scripts/build.mjs is npm's `prepare` step: without src/ it does nothing, the build stage compiles.
COPY package.json package-lock.json .npmrc ./
COPY scripts/build.mjs ./scripts/
RUN npm ci --no-audit --no-fund

FROM deps AS build
COPY . .
RUN npm run build

# Runtime dependencies only; the compiled code and the files it reads beside package.json.
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    DATA_DIR=/app/data
WORKDIR /app
COPY package.json package-lock.json .npmrc ./
COPY scripts/build.mjs ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY migrations ./migrations
COPY openapi.yaml ./
COPY ui ./ui
# DATA_DIR is only used by the embedded PGlite store (no DATABASE_URL); it must be writable.
RUN mkdir -p /app/data && chown node:node /app/data
# The official node images carry an unprivileged `node` user (uid 1000).
USER node
EXPOSE 8080
# Slim images have no curl; Node 20 has fetch.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Run with an init process (`docker run --init`, or `init: true` as docker-compose.yml does) so PID 1
# reaps children and forwards signals. The embedded store's lock records boot id and start time, so
# a container restarted after a SIGKILL (PID 1 again) takes over its own stale lock.
# The same node flags as `npm start` (test/unit/start-command.test.ts): a small young generation, see README.
CMD ["node", "--max-semi-space-size=4", "dist/src/main.js"]
