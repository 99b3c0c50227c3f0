# syntax=docker/dockerfile:1
# Build stage: compiles better-sqlite3 from source (no prebuilt download) and the TypeScript.
FROM node:22-bookworm AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json .npmrc ./
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
COPY migrations ./migrations
COPY config ./config
# Same as .ci/run: `npm ci` (which runs `prepare`: tsc). prebuild-install is told not to download
# a binary, so better-sqlite3 compiles from source here as it does on CI.
ENV npm_config_build_from_source=true
RUN npm ci && npm prune --omit=dev

# Runtime stage: only what runs, as a non-root user, with the database on a volume.
FROM node:22-bookworm-slim
ENV NODE_ENV=production
# No heap limit by default: pass one with -e NODE_OPTIONS=--max-old-space-size=<MiB> if memory
# needs it (docs/operations.md, "Limiting memory").
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/package.json ./package.json
COPY migrations ./migrations
COPY config ./config
RUN groupadd --system boxwatch && useradd --system --gid boxwatch --home /data boxwatch \
  && mkdir -p /data && chown boxwatch:boxwatch /data
USER boxwatch
VOLUME ["/data"]
WORKDIR /data
EXPOSE 9464
ENTRYPOINT ["node", "/app/dist/src/main.js"]
CMD ["run", "--config", "/data/boxwatch.yaml"]
