// node-redis against xstreamd: xAdd, xGroupCreate, xReadGroup (immediate and BLOCK woken by an
// xAdd from another connection), xAck, xAutoClaim, xPending, xInfoStream, MULTI.
// Environment: XSTREAMD_PORT, XSTREAMD_PASSWORD (optional), XSTREAMD_RESP (2 or 3).
"use strict";

const assert = require("node:assert/strict");
const { createClient } = require("redis");

const port = Number(process.env.XSTREAMD_PORT);
const password = process.env.XSTREAMD_PASSWORD || undefined;
const resp = Number(process.env.XSTREAMD_RESP || "2");

async function main() {
  const client = createClient({
    socket: { host: "127.0.0.1", port, reconnectStrategy: false },
    password,
    RESP: resp,
  });
  client.on("error", (err) => {
    console.error("client error:", err);
  });
  await client.connect();
  const blocker = client.duplicate();
  blocker.on("error", (err) => {
    console.error("blocker error:", err);
  });
  await blocker.connect();
  const key = `interop:node-redis:resp${resp}`;
  try {
    await client.del(key);
    assert.equal(await client.xAdd(key, "1-1", { sensor: "a", temp: "20.5" }), "1-1");
    assert.equal(await client.xAdd(key, "1-2", { sensor: "b", temp: "21" }), "1-2");
    assert.equal(await client.xAdd(key, "1-3", { sensor: "c", temp: "-4" }), "1-3");
    assert.equal(await client.xLen(key), 3);
    assert.equal(await client.xGroupCreate(key, "grp", "0"), "OK");
    assert.equal(await client.xGroupCreate(`${key}:other`, "grp", "$", { MKSTREAM: true }), "OK");

    const first = await client.xReadGroup("grp", "alice", { key, id: ">" }, { COUNT: 10 });
    assert.equal(first.length, 1);
    assert.equal(first[0].name, key);
    assert.deepEqual(first[0].messages.map((m) => m.id), ["1-1", "1-2", "1-3"]);
    assert.equal(first[0].messages[0].message.sensor, "a");
    assert.equal(first[0].messages[0].message.temp, "20.5");
    assert.equal(await client.xAck(key, "grp", "1-1"), 1);

    // Nothing new: BLOCK 100 times out with a null reply.
    assert.equal(await blocker.xReadGroup("grp", "bob", { key, id: ">" }, { BLOCK: 100 }), null);

    // bob blocks on his own connection; an xAdd on the other one wakes him.
    const waiting = blocker.xReadGroup("grp", "bob", { key, id: ">" }, { COUNT: 1, BLOCK: 10000 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const lateId = await client.xAdd(key, "*", { sensor: "late" });
    const woken = await waiting;
    assert.equal(woken[0].name, key);
    assert.equal(woken[0].messages[0].id, lateId);
    assert.equal(woken[0].messages[0].message.sensor, "late");

    // carol takes over everything pending.
    const claim = await client.xAutoClaim(key, "grp", "carol", 0, "0-0", { COUNT: 10 });
    assert.equal(claim.nextId, "0-0");
    assert.deepEqual(claim.messages.map((m) => m.id), ["1-2", "1-3", lateId]);
    assert.equal(claim.messages[0].message.sensor, "b");
    assert.deepEqual(claim.deletedMessages, []);

    const pending = await client.xPending(key, "grp");
    assert.equal(pending.pending, 3);
    assert.equal(pending.firstId, "1-2");
    assert.equal(pending.lastId, lateId);
    assert.deepEqual(pending.consumers.map((c) => [c.name, Number(c.deliveriesCounter)]),
      [["carol", 3]]);
    assert.equal(await client.xAck(key, "grp", ["1-2", "1-3", lateId]), 3);
    assert.equal((await client.xPending(key, "grp")).pending, 0);

    const info = await client.xInfoStream(key);
    assert.equal(info.length, 4);
    assert.equal(info.groups, 1);
    assert.equal(info["last-generated-id"], lateId);

    const results = await client.multi().xAdd(key, "*", { p: "1" }).xLen(key).exec();
    assert.equal(results[1], 5);

    await client.del([key, `${key}:other`]);
    console.log(`ok node-redis resp${resp}`);
  } finally {
    await blocker.close();
    await client.close();
  }
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
