# Switchboard on the official Node 20 image, installed from the release package alone.
# Build the package first (in this repository): pnpm release:pack   → release/switchboard-<version>.tgz
#   docker build -t switchboard .
#   docker run -p 5170:5170 -v sb-data:/data -e SWITCHBOARD_TOKEN=$(openssl rand -hex 32) \
#     -e SWITCHBOARD_ALLOWED_HOSTS=localhost:5170 switchboard
FROM node:20-bookworm-slim

# npm installs the third-party dependencies from the registry; the package runs no install scripts.
COPY release/switchboard-*.tgz /tmp/
RUN npm install -g --omit=dev /tmp/switchboard-*.tgz \
 && rm /tmp/switchboard-*.tgz \
 && npm cache clean --force \
 && mkdir -p /data /home/node/.switchboard \
 && chown node:node /data /home/node/.switchboard

# Runs, the catalog and co-editing history live in /data; approvals (trust.json) in SWITCHBOARD_HOME.
ENV NODE_ENV=production \
    SWITCHBOARD_DATA=/data \
    SWITCHBOARD_HOME=/home/node/.switchboard
USER node
WORKDIR /home/node
VOLUME ["/data"]
EXPOSE 5170

# Beyond loopback the server refuses to start without SWITCHBOARD_TOKEN (pass it with -e).
CMD ["switchboard", "serve", "--host", "0.0.0.0", "--port", "5170"]
