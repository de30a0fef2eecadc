# syntax=docker/dockerfile:1
# One multi-stage build for every Conveyor process; each final stage is one service image:
#   docker build --target runner -t conveyor/runner .      (ingress, orchestrator, runner, dispatcher, gateway, admin, sandbox, migrate)
# docker-compose.yml builds all eight targets from this file; `dev-fakes` (a fake model and HTTP-bot
# integrator, for development deployments only) is built by compose's `fakes` profile and the dev overlay.
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- workspace manifests only: the npm layers are cached until a package.json or the lockfile changes
FROM ${NODE_IMAGE} AS manifests
WORKDIR /app
COPY package.json package-lock.json ./
COPY libs/contracts/package.json libs/contracts/
COPY libs/test-support/package.json libs/test-support/
COPY libs/telemetry/package.json libs/telemetry/
COPY libs/pipeline/package.json libs/pipeline/
COPY libs/platform-kit/package.json libs/platform-kit/
COPY libs/platforms/http-bot/package.json libs/platforms/http-bot/
COPY libs/delivery/package.json libs/delivery/
COPY libs/redis-scripts/package.json libs/redis-scripts/
COPY libs/message-state/package.json libs/message-state/
COPY libs/bus/package.json libs/bus/
COPY libs/persistence/package.json libs/persistence/
COPY libs/config/package.json libs/config/
COPY libs/config-read-model/package.json libs/config-read-model/
COPY libs/agent/package.json libs/agent/
COPY libs/sandbox/package.json libs/sandbox/
COPY libs/service-kit/package.json libs/service-kit/
COPY libs/admin/package.json libs/admin/
COPY libs/plugin-sdk/package.json libs/plugin-sdk/
COPY libs/platforms/telegram/package.json libs/platforms/telegram/
COPY libs/platforms/webchat/package.json libs/platforms/webchat/
COPY libs/platforms/slack/package.json libs/platforms/slack/
COPY libs/platforms/lark/package.json libs/platforms/lark/
COPY libs/platforms/line/package.json libs/platforms/line/
COPY libs/platforms/wecom/package.json libs/platforms/wecom/
COPY libs/platforms/registry/package.json libs/platforms/registry/
COPY libs/platforms/onebot/package.json libs/platforms/onebot/
COPY libs/platforms/discord/package.json libs/platforms/discord/
COPY libs/platforms/dingtalk/package.json libs/platforms/dingtalk/
COPY libs/platforms/officialaccount/package.json libs/platforms/officialaccount/
COPY libs/platforms/wecomcs/package.json libs/platforms/wecomcs/
COPY libs/platforms/wecombot/package.json libs/platforms/wecombot/
COPY libs/platforms/kook/package.json libs/platforms/kook/
COPY libs/platforms/qqofficial/package.json libs/platforms/qqofficial/
COPY libs/platforms/satori/package.json libs/platforms/satori/
COPY libs/platforms/matrix/package.json libs/platforms/matrix/
COPY libs/gateway/package.json libs/gateway/
COPY apps/console/package.json apps/console/
COPY services/ingress/package.json services/ingress/
COPY services/orchestrator/package.json services/orchestrator/
COPY services/runner/package.json services/runner/
COPY services/dispatcher/package.json services/dispatcher/
COPY services/gateway/package.json services/gateway/
COPY services/admin/package.json services/admin/
COPY services/sandbox/package.json services/sandbox/
COPY test/package.json test/
COPY bench/package.json bench/
COPY examples/keyword-plugin/package.json examples/keyword-plugin/

# ---- compile: all dependencies, Prisma client generated (no schema engine needed), tsc
FROM manifests AS build
RUN npm ci --no-audit --no-fund
COPY tsconfig.base.json tsconfig.json prisma.config.ts ./
COPY prisma prisma
COPY libs libs
COPY apps apps
COPY services services
# `prisma generate` only renders the client; the schema-engine download it attempts is not needed.
# The web console's static files come from vite, after tsc built the libraries it bundles.
RUN PRISMA_SCHEMA_ENGINE_BINARY=/bin/true npx prisma generate \
 && npx tsc -b services/ingress services/orchestrator services/runner services/dispatcher services/gateway services/admin services/sandbox libs/config \
 && npm run build -w apps/console

# ---- production dependencies of the libraries and services only (no test, bench, typescript, prisma CLI)
FROM manifests AS prod-deps
RUN npm ci --omit=dev --no-audit --no-fund --include-workspace-root=false \
      -w libs/contracts -w libs/telemetry -w libs/pipeline -w libs/delivery -w libs/redis-scripts -w libs/message-state -w libs/bus \
      -w libs/persistence -w libs/config -w libs/config-read-model -w libs/agent -w libs/sandbox -w libs/service-kit -w libs/admin -w libs/plugin-sdk \
      -w libs/platform-kit -w libs/platforms/http-bot -w libs/platforms/telegram -w libs/platforms/webchat -w libs/platforms/slack -w libs/platforms/lark -w libs/platforms/line -w libs/platforms/wecom -w libs/platforms/registry -w libs/platforms/onebot -w libs/platforms/discord -w libs/platforms/dingtalk -w libs/platforms/officialaccount -w libs/platforms/wecomcs -w libs/platforms/wecombot -w libs/platforms/kook -w libs/platforms/qqofficial -w libs/platforms/satori -w libs/platforms/matrix -w libs/gateway \
      -w services/ingress -w services/orchestrator -w services/runner -w services/dispatcher -w services/gateway -w services/admin -w services/sandbox -w apps/console \
 && npm cache clean --force

# ---- one tree per role: the workspaces and packages its process loads, compiled output without
# tests or sources, and nothing of the other roles (scripts/role-tree.mjs says what goes in)
FROM prod-deps AS role-trees
COPY --from=build /app/libs libs
COPY --from=build /app/services services
COPY --from=build /app/apps/console apps/console
COPY --from=build /app/prisma/migrations prisma/migrations
COPY scripts/role-tree.mjs scripts/
RUN for role in ingress orchestrator runner dispatcher gateway admin sandbox migrate; do node scripts/role-tree.mjs "$role" "/trees/$role"; done

# ---- runtime: non-root; each role's stage adds its own tree
FROM ${NODE_IMAGE} AS runtime
ARG CONVEYOR_VERSION=0.1.0
ENV NODE_ENV=production \
    CONVEYOR_VERSION=${CONVEYOR_VERSION} \
    HOST=0.0.0.0
WORKDIR /app
COPY conveyor.example.yaml /etc/conveyor/conveyor.yaml
# The image's `node` user (uid 1000); Kubernetes' runAsNonRoot needs the numeric id.
USER 1000:1000

FROM runtime AS migrate
COPY --from=role-trees /trees/migrate /app
CMD ["node", "--enable-source-maps", "libs/config/dist/cli/setup.js"]

FROM runtime AS ingress
COPY --from=role-trees /trees/ingress /app
WORKDIR /app/services/ingress
EXPOSE 8080
ENV PORT=8080 OTEL_SERVICE_NAME=conveyor-ingress
CMD ["node", "--enable-source-maps", "--import", "@conveyor/telemetry/register", "dist/main.js"]

FROM runtime AS orchestrator
COPY --from=role-trees /trees/orchestrator /app
WORKDIR /app/services/orchestrator
EXPOSE 8081
ENV PORT=8081 OTEL_SERVICE_NAME=conveyor-orchestrator
CMD ["node", "--enable-source-maps", "--import", "@conveyor/telemetry/register", "dist/main.js"]

FROM runtime AS runner
COPY --from=role-trees /trees/runner /app
WORKDIR /app/services/runner
EXPOSE 8082
ENV PORT=8082 OTEL_SERVICE_NAME=conveyor-runner
CMD ["node", "--enable-source-maps", "--import", "@conveyor/telemetry/register", "dist/main.js"]

FROM runtime AS dispatcher
COPY --from=role-trees /trees/dispatcher /app
WORKDIR /app/services/dispatcher
EXPOSE 8083
ENV PORT=8083 OTEL_SERVICE_NAME=conveyor-dispatcher
CMD ["node", "--enable-source-maps", "--import", "@conveyor/telemetry/register", "dist/main.js"]

FROM runtime AS gateway
COPY --from=role-trees /trees/gateway /app
WORKDIR /app/services/gateway
EXPOSE 8085
ENV PORT=8085 OTEL_SERVICE_NAME=conveyor-gateway
CMD ["node", "--enable-source-maps", "--import", "@conveyor/telemetry/register", "dist/main.js"]

FROM runtime AS admin
COPY --from=role-trees /trees/admin /app
WORKDIR /app/services/admin
EXPOSE 8084
ENV PORT=8084 OTEL_SERVICE_NAME=conveyor-admin
CMD ["node", "--enable-source-maps", "--import", "@conveyor/telemetry/register", "dist/main.js"]

# The sandbox runs the AI agent's shell commands, so its image carries what they need besides its
# tree: bubblewrap (bwrap: the user, PID, mount, IPC, UTS and network namespaces each command runs
# in), util-linux (prlimit: each command's rlimits on CPU time, memory, processes, file size and open
# files), GNU tar (workspaces are packed and unpacked inside the sandbox, never on the host) and
# Python 3 (with the image's Node.js, the interpreters commands use). A command sees /usr read-only
# and nothing else of the image, so what is installed here is what it can run. Debian's bwrap is not
# setuid: it makes an unprivileged user namespace, so the image stays non-root, and the engine must let
# a container make one (docker-compose.yml and k8s/base/deployment-sandbox.yaml say how). The
# packages come before the tree, so a code change does not reinstall them.
FROM runtime AS sandbox
USER root
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap util-linux tar python3 \
 && rm -rf /var/lib/apt/lists/*
USER 1000:1000
COPY --from=role-trees /trees/sandbox /app
WORKDIR /app/services/sandbox
EXPOSE 8086
ENV PORT=8086 OTEL_SERVICE_NAME=conveyor-sandbox
CMD ["node", "--enable-source-maps", "--import", "@conveyor/telemetry/register", "dist/main.js"]

# ---- development only: the fake OpenAI-compatible model (:8090) and HTTP-bot integrator (:8091) that
# the dev overlay and compose's `fakes` profile deploy, so a first deployment answers without accounts.
FROM build AS dev-fakes-build
COPY test test
RUN npx tsc -b test

FROM dev-fakes-build AS dev-fakes
WORKDIR /app/test
EXPOSE 8090 8091
ENV NODE_ENV=production FAKES_HOST=0.0.0.0 FAKE_LLM_PORT=8090 FAKE_CALLBACK_PORT=8091
USER 1000:1000
CMD ["node", "--enable-source-maps", "dist/fakes/dev-fakes-main.js"]
