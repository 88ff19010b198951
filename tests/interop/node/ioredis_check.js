// ioredis against xstreamd: XADD, XGROUP CREATE, XREADGROUP (immediate and BLOCK woken by an
// XADD from another connection), XACK, XAUTOCLAIM, XPENDING, XINFO STREAM, SUBSCRIBE and a
// keyspace notification, a Lua script (defineCommand), and an ACL user's login and refusals.
// Environment: XSTREAMD_PORT, XSTREAMD_PASSWORD (optional), XSTREAMD_RESP (2 or 3).
"use strict";

const assert = require("node:assert/strict");
const Redis = require("ioredis");

const port = Number(process.env.XSTREAMD_PORT);
const password = process.env.XSTREAMD_PASSWORD || undefined;
const protocol = Number(process.env.XSTREAMD_RESP || "2");

function connect() {
  return new Redis({
    host: "127.0.0.1",
    port,
    password,
    protocol,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    lazyConnect: true,
  });
}

// Field lists arrive as flat [f1, v1, f2, v2] arrays.
function fields(flat) {
  const out = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i]] = flat[i + 1];
  return out;
}

async function main() {
  const redis = connect();
  const blocker = connect();
  await redis.connect();
  await blocker.connect();
  const key = `interop:ioredis:resp${protocol}`;
  try {
    await redis.del(key);
    assert.equal(await redis.xadd(key, "1-1", "sensor", "a", "temp", "20.5"), "1-1");
    assert.equal(await redis.xadd(key, "1-2", "sensor", "b", "temp", "21"), "1-2");
    assert.equal(await redis.xadd(key, "1-3", "sensor", "c", "temp", "-4"), "1-3");
    assert.equal(await redis.xlen(key), 3);
    assert.equal(await redis.xgroup("CREATE", key, "grp", "0"), "OK");

    // Everything new, for alice.
    const first = await redis.xreadgroup("GROUP", "grp", "alice", "COUNT", 10, "STREAMS", key, ">");
    assert.equal(first.length, 1);
    assert.equal(first[0][0], key);
    assert.deepEqual(first[0][1].map((e) => e[0]), ["1-1", "1-2", "1-3"]);
    assert.deepEqual(fields(first[0][1][0][1]), { sensor: "a", temp: "20.5" });
    assert.equal(await redis.xack(key, "grp", "1-1"), 1);

    // Nothing new: BLOCK 100 times out with a null reply.
    assert.equal(await blocker.xreadgroup("GROUP", "grp", "bob", "BLOCK", 100, "STREAMS", key, ">"), null);

    // bob blocks; an XADD on the other connection wakes him.
    const waiting = blocker.xreadgroup("GROUP", "grp", "bob", "COUNT", 1, "BLOCK", 10000, "STREAMS", key, ">");
    await new Promise((resolve) => setTimeout(resolve, 200));
    const lateId = await redis.xadd(key, "*", "sensor", "late");
    const woken = await waiting;
    assert.equal(woken[0][0], key);
    assert.equal(woken[0][1][0][0], lateId);
    assert.deepEqual(fields(woken[0][1][0][1]), { sensor: "late" });

    // carol takes over everything pending (1-2, 1-3 from alice, the late one from bob).
    const [next, claimed, deleted] = await redis.xautoclaim(key, "grp", "carol", 0, "0-0", "COUNT", 10);
    assert.equal(next, "0-0");
    assert.deepEqual(claimed.map((e) => e[0]), ["1-2", "1-3", lateId]);
    assert.deepEqual(fields(claimed[0][1]), { sensor: "b", temp: "21" });
    assert.deepEqual(deleted, []);

    const [count, lowest, highest, consumers] = await redis.xpending(key, "grp");
    assert.equal(count, 3);
    assert.equal(lowest, "1-2");
    assert.equal(highest, lateId);
    assert.deepEqual(consumers, [["carol", "3"]]);
    assert.equal(await redis.xack(key, "grp", "1-2", "1-3", lateId), 3);
    assert.equal((await redis.xpending(key, "grp"))[0], 0);

    const info = fields(await redis.xinfo("STREAM", key));
    assert.equal(info.length, 4);
    assert.equal(info.groups, 1);
    assert.equal(info["last-generated-id"], lateId);

    // A pipeline and a MULTI.
    const piped = await redis.pipeline().xadd(key, "*", "p", "1").xlen(key).exec();
    assert.equal(piped[1][1], 5);
    const multi = await redis.multi().xtrim(key, "MAXLEN", 2).xlen(key).exec();
    assert.deepEqual(multi.map((r) => r[1]), [3, 2]);

    // Pub/Sub: a message, and the keyspace notification of an XADD.
    const subscriber = connect();
    await subscriber.connect();
    try {
      const heard = [];
      const both = new Promise((resolve) => {
        const note = (message) => {
          heard.push(message);
          if (heard.length === 2) resolve();
        };
        subscriber.on("message", (channel, text) => note(["message", channel, text]));
        subscriber.on("pmessage", (pattern, channel, text) => note([pattern, channel, text]));
      });
      await subscriber.subscribe(`${key}:news`);
      await subscriber.psubscribe("__keyevent@0__:x*");
      await redis.config("SET", "notify-keyspace-events", "Et");
      assert.equal(await redis.publish(`${key}:news`, "hello"), 1);
      await redis.xadd(key, "*", "n", "1");
      await both;
      await redis.config("SET", "notify-keyspace-events", "");
      assert.deepEqual(heard, [["message", `${key}:news`, "hello"],
                               ["__keyevent@0__:x*", "__keyevent@0__:xadd", key]]);
    } finally {
      subscriber.disconnect();
    }

    // A Lua script through defineCommand (EVALSHA, then EVAL after a NOSCRIPT).
    redis.defineCommand("xaddCount", {
      numberOfKeys: 1,
      lua: "redis.call('XADD', KEYS[1], '*', 'via', ARGV[1]) return redis.call('XLEN', KEYS[1])",
    });
    const before = await redis.xlen(key);
    assert.equal(await redis.xaddCount(key, "lua"), before + 1);
    await redis.script("FLUSH");
    assert.equal(await redis.xaddCount(key, "lua"), before + 2);
    await redis.xtrim(key, "MAXLEN", before);

    // An ACL user: ioredis logs in with `username` and gets Redis's NOPERM refusals.
    const user = `ioredis-resp${protocol}`;
    await redis.call("ACL", "SETUSER", user, "on", ">pw", `~${key}`, "+@stream");
    const limited = new Redis({ host: "127.0.0.1", port, username: user, password: "pw",
                                protocol, maxRetriesPerRequest: 0, retryStrategy: () => null,
                                lazyConnect: true });
    await limited.connect();
    try {
      assert.equal(await limited.xlen(key), await redis.xlen(key));
      await assert.rejects(limited.xlen("elsewhere"),
                           /^ReplyError: NOPERM No permissions to access a key/);
      await assert.rejects(limited.get(key), /^ReplyError: NOPERM User .* has no permissions/);
    } finally {
      limited.disconnect();
      await redis.call("ACL", "DELUSER", user);
    }

    await redis.del(key);
    console.log(`ok ioredis resp${protocol}`);
  } finally {
    redis.disconnect();
    blocker.disconnect();
  }
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
