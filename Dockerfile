# hookrelay delivery worker. No build step: the bin runs the TypeScript sources through tsx.
FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY migrations ./migrations
COPY tsconfig.json ./
USER node
# Health, readiness, Prometheus metrics and QStash callbacks (HOOKRELAY_HTTP_PORT).
EXPOSE 8787
# SIGTERM → graceful shutdown within HOOKRELAY_SHUTDOWN_TIMEOUT_MS (default 25 s), exit 0.
# Heap flags as in bin/hookrelay.mjs: they cap V8 heap growth (peak RSS ~143 MB vs ~255 MB).
CMD ["node","--max-semi-space-size=2","--max-old-space-size=384","bin/hookrelay.mjs","worker"]
