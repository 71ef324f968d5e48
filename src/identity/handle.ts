import { nodeCrypto } from "../core/node-crypto.ts";

const { randomInt: cryptoRandomInt } = nodeCrypto;

/** Returns a uniformly random integer in `[0, max)`. */
export type RandomInt = (max: number) => number;

// 64 short adjectives and 64 short animals: 4096 word pairs × 9000 numbers ≈ 36.9 million handles.
const ADJECTIVES: readonly string[] = (
  "amber azure bold brave brisk calm clever coral cosmic crisp dapper eager early fancy fleet fluffy " +
  "frosty gentle giddy golden grand happy hazel humble icy jolly keen kind lively lucky lunar mellow " +
  "merry mighty misty nimble noble olive plucky polar proud quick quiet rapid rosy rustic sandy shiny " +
  "silent silver sleek snowy solar spry steady sunny swift tidy vivid warm wild witty young zesty"
).split(" ");

const ANIMALS: readonly string[] = (
  "otter badger beaver bison bobcat camel cobra condor crane cricket dingo dolphin eagle egret falcon ferret " +
  "finch fox gecko gibbon heron hornet ibis iguana jackal jaguar koala lemur lion llama lynx magpie " +
  "marten mole moose newt ocelot orca osprey owl panda parrot pelican puffin quail rabbit raven robin " +
  "salmon seal shrew sloth sparrow stork swan tapir tiger toucan trout turtle walrus weasel wombat yak"
).split(" ");

/**
 * A readable, filesystem-safe handle such as `amber-otter-4821`: an adjective, an animal and a
 * four-digit number (1000–9999). Randomness is injectable; the default is `crypto.randomInt`.
 * Handles are names, not secrets: callers must still check a generated handle is not taken.
 */
export function generateHandle(randomInt: RandomInt = cryptoRandomInt): string {
  const adjective = ADJECTIVES[pick(randomInt, ADJECTIVES.length)];
  const animal = ANIMALS[pick(randomInt, ANIMALS.length)];
  const number = 1000 + pick(randomInt, 9000);
  return `${adjective}-${animal}-${number}`;
}

function pick(randomInt: RandomInt, max: number): number {
  const value = randomInt(max);
  if (!Number.isInteger(value) || value < 0 || value >= max) {
    throw new RangeError(`randomInt(${max}) returned ${value}, outside [0, ${max}).`);
  }
  return value;
}

const HANDLE_PATTERN = /^[a-z][a-z0-9-]{1,62}[a-z0-9]$/;
/** Device names Windows will not let a file be called, whatever the extension. */
const RESERVED_NAMES = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/;

/**
 * Whether `value` may be a handle: 3–64 characters of lowercase letters, digits and hyphens,
 * starting with a letter and not ending with a hyphen. Handles are used as file names, so this
 * rules out dots, slashes, `..`, whitespace and Windows device names.
 */
export function isValidHandle(value: unknown): value is string {
  return typeof value === "string" && HANDLE_PATTERN.test(value) && !RESERVED_NAMES.test(value);
}
