# xstreamd: a Redis-compatible Redis Streams server.
#   docker build -t xstreamd .
#   docker run -p 6379:6379 xstreamd                                   # no password
#   docker run -p 6379:6379 -e XSTREAMD_REQUIREPASS=secret xstreamd    # clients must AUTH
# Data (AOF and snapshots) lives in /data: mount a volume there to keep it.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

RUN groupadd --system --gid 10001 xstreamd \
    && useradd --system --uid 10001 --gid xstreamd --home-dir /data --shell /usr/sbin/nologin xstreamd \
    && mkdir -p /data && chown xstreamd:xstreamd /data

WORKDIR /opt/xstreamd
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY storage ./storage
COPY server ./server
COPY spark_connector ./spark_connector
# --compile: the modules' bytecode is written at build time (PYTHONDONTWRITEBYTECODE keeps the
# server from writing it at run time), so a start does not compile ~200 modules first.
RUN pip install --no-cache-dir --compile . && rm -rf /root/.cache

USER xstreamd
WORKDIR /data
VOLUME ["/data"]
EXPOSE 6379

# server.docker_entry binds 0.0.0.0 and adds --requirepass from XSTREAMD_REQUIREPASS when set;
# extra arguments after the image name are passed on (e.g. --appendfsync always).
ENTRYPOINT ["python", "-m", "server.docker_entry"]
