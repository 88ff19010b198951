# syntax=docker/dockerfile:1
# xstreamd: a Redis-compatible Redis Streams server.
#   docker build -t xstreamd .
#   docker run -p 6379:6379 xstreamd                                   # no password
#   docker run -p 6379:6379 -e XSTREAMD_REQUIREPASS=secret xstreamd    # clients must AUTH
# Data (AOF and snapshots) lives in /data: mount a volume there to keep it.
# The build stage compiles the optional C module (storage/_native.c) into a wheel, next to
# the wheels of the dependencies; the image itself carries no compiler.
FROM python:3.11-slim AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY protocol ./protocol
COPY storage ./storage
COPY server ./server
COPY spark_connector ./spark_connector
RUN pip wheel --no-cache-dir --wheel-dir /wheels . \
    && python -c "import glob, sys, zipfile; \
whl = glob.glob('/wheels/xstreamd-*.whl')[0]; \
sys.exit(not any('_native' in n for n in zipfile.ZipFile(whl).namelist()))"

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1

RUN groupadd --system --gid 10001 xstreamd \
    && useradd --system --uid 10001 --gid xstreamd --home-dir /data --shell /usr/sbin/nologin xstreamd \
    && mkdir -p /data && chown xstreamd:xstreamd /data

# --compile: the modules' bytecode is written at build time (PYTHONDONTWRITEBYTECODE keeps the
# server from writing it at run time), so a start does not compile ~200 modules first.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --compile --no-index --find-links /wheels xstreamd \
    && rm -rf /root/.cache

USER xstreamd
WORKDIR /data
VOLUME ["/data"]
EXPOSE 6379

# server.docker_entry binds 0.0.0.0 and adds --requirepass from XSTREAMD_REQUIREPASS when set;
# extra arguments after the image name are passed on (e.g. --appendfsync always).
ENTRYPOINT ["python", "-m", "server.docker_entry"]
