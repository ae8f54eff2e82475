# hookrelay delivery worker (also runs `hookrelay migrate` and the admin CLI).
# Two stages: `build` compiles src/ → dist/ with the dev dependencies, then drops them; the
# runtime stage gets only package.json, the pruned node_modules, dist/ (with dist/workers/, the
# deployable worker entries), bin/, migrations/ and assets/ (the operator console's script and styles).

FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no install script runs (hookrelay builds at pack time, not at install); src/
# is copied after this layer so that a source change does not reinstall the dependencies, and
# the build runs just below.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json tsconfig.workers.json ./
COPY src ./src
COPY workers ./workers
COPY scripts/copy-lua.mjs scripts/pgdata-template.mjs scripts/bundle-cli.mjs ./scripts/
# The migrations: the build pre-applies them to the embedded store's pgdata template.
COPY migrations ./migrations
RUN npm run build
# Drop the dev dependencies. The QStash SDK and the OpenTelemetry Node SDK are optional peers
# (devDependencies here): put them back as production packages, at the lockfile's versions, so a
# worker given QSTASH_TOKEN / HOOKRELAY_PUBLIC_URL or OTEL_EXPORTER_OTLP_ENDPOINT starts instead of
# stopping with "needs the optional package …".
# --no-save: package.json and package-lock.json stay as in the repository.
RUN npm prune --omit=dev --no-audit --no-fund \
 && npm install --no-save --save-prod --omit=dev --ignore-scripts --no-audit --no-fund \
      "@upstash/qstash@$(node -p "require('./package-lock.json').packages['node_modules/@upstash/qstash'].version")" \
      "@opentelemetry/sdk-node@$(node -p "require('./package-lock.json').packages['node_modules/@opentelemetry/sdk-node'].version")" \
 && npm cache clean --force

FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production
# The embedded store's folder (used by `hookrelay start` without DATABASE_URL, and by a private
# redis-server); the worker on Postgres does not write to it. The image runs as `node`, which
# cannot create folders under /app (owned by root), so it is made here and handed to `node`.
ENV HOOKRELAY_DATA_DIR=/app/.hookrelay
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY bin ./bin
COPY migrations ./migrations
COPY assets ./assets
RUN mkdir -p /app/.hookrelay && chown node:node /app/.hookrelay
USER node
# Health (/healthz), readiness (/readyz), Prometheus metrics, QStash callbacks and, with
# HOOKRELAY_CONSOLE_TOKEN, the operator console under /console (HOOKRELAY_HTTP_PORT).
EXPOSE 8787
# Liveness: the process answers. node:20-slim has no curl, so node's own fetch does it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.HOOKRELAY_HTTP_PORT||8787)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# SIGTERM → graceful shutdown within HOOKRELAY_SHUTDOWN_TIMEOUT_MS (default 25 s), exit 0.
# Heap flags as in package.json's `start` and bin/hookrelay.mjs: they cap V8 heap growth
# (peak RSS ~132 MB draining 100,000 queued deliveries). dist/workers/delivery.js is the compiled
# workers/delivery.ts: the delivery worker from the environment (what `hookrelay worker` runs).
CMD ["node", "--max-semi-space-size=16", "--max-old-space-size=384", "dist/workers/delivery.js"]
