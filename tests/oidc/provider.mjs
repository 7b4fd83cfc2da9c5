// A real OpenID Provider (npm's certified `oidc-provider`) on loopback for the
// server's end-to-end OIDC tests (tests/server/oidc.rs).
//
// Environment: PROVIDER_PORT, CLIENT_ID, CLIENT_SECRET, REDIRECT_URI,
// ID_TOKEN_TTL (seconds, default 3600); TLS_CERT and TLS_KEY (PEM files) serve
// https://localhost:PORT instead of http://127.0.0.1:PORT.
//
// The provider's own development login and consent forms are served
// (devInteractions); any password is accepted, the login names one of
// ACCOUNTS below. The test drives it through stdin, one command a line; each
// is answered with one line on stdout:
//   rotate                 new signing key (new kid) first; the old one stays published
//   mutate {json}          re-sign the next id_tokens with these claims changed:
//                          {"aud": "..."}, {"nonce": "..."}, {"expIn": -600},
//                          {"unknownKey": true} (signed by a key that is not published);
//                          {} switches it off
//   jwks-requests          how many times the JWKS was fetched
// Answers are stdout lines starting `@ `; the first is `@ ready <issuer> <kid>`.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import readline from 'node:readline';

import * as jose from 'jose';
import Provider from 'oidc-provider';

const port = Number(process.env.PROVIDER_PORT);
const tls = process.env.TLS_CERT
  ? { cert: fs.readFileSync(process.env.TLS_CERT), key: fs.readFileSync(process.env.TLS_KEY) }
  : undefined;
const issuer = tls ? `https://localhost:${port}` : `http://127.0.0.1:${port}`;
const idTokenTtl = Number(process.env.ID_TOKEN_TTL || 3600);

// login (which is also the `sub`) -> claims. `erin` has no preferred_username
// (mapped by its verified email), `frank` neither (mapped by sub), `grace`
// only an unverified email (mapped by sub).
const ACCOUNTS = {
  alice: { preferred_username: 'alice', email: 'alice@example.test' },
  bob: { preferred_username: 'bob', email: 'bob@example.test' },
  carol: { preferred_username: 'carol', email: 'carol@example.test' },
  dave: { preferred_username: 'dave', email: 'dave@example.test' },
  erin: { email: 'erin@example.test', email_verified: true },
  frank: {},
  // Claims erin's address without the provider having verified it.
  grace: { email: 'erin@example.test', email_verified: false },
};

// stdout carries only the answers to the test (prefixed `@ `); the
// provider's own notices go to stderr.
for (const level of ['log', 'info', 'warn', 'debug']) {
  console[level] = (...args) => console.error(...args);
}
const answer = (line) => process.stdout.write(`@ ${line}\n`);

async function newKey() {
  const { privateKey } = await jose.generateKeyPair('RS256', { extractable: true });
  const jwk = await jose.exportJWK(privateKey);
  return { ...jwk, kid: crypto.randomUUID(), alg: 'RS256', use: 'sig' };
}

let keys = [await newKey()];
const stray = await newKey();
let mutation = {};
let jwksRequests = 0;

async function findAccount(ctx, id) {
  const account = ACCOUNTS[id];
  if (!account) return undefined;
  return { accountId: id, claims: async () => ({ sub: id, ...account }) };
}

async function resign(idToken) {
  const claims = jose.decodeJwt(idToken);
  const { unknownKey, expIn, ...changes } = mutation;
  Object.assign(claims, changes);
  if (expIn !== undefined) {
    const now = Math.floor(Date.now() / 1000);
    claims.iat = now + expIn - 60;
    claims.exp = now + expIn;
  }
  const key = unknownKey ? stray : keys[0];
  return new jose.SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', kid: key.kid })
    .sign(await jose.importJWK(key, 'RS256'));
}

function build() {
  const provider = new Provider(issuer, {
    clients: [{
      client_id: process.env.CLIENT_ID,
      client_secret: process.env.CLIENT_SECRET,
      redirect_uris: [process.env.REDIRECT_URI],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    }],
    jwks: { keys },
    findAccount,
    claims: {
      openid: ['sub'],
      profile: ['preferred_username'],
      email: ['email', 'email_verified'],
    },
    cookies: { keys: ['vrrp-monitor-test-cookie-key'] },
    features: { devInteractions: { enabled: true } },
    pkce: { required: () => true },
    ttl: { IdToken: idTokenTtl },
  });
  provider.use(async (ctx, next) => {
    if (ctx.path === '/jwks') jwksRequests += 1;
    await next();
    if (ctx.path === '/token' && ctx.status === 200 && Object.keys(mutation).length > 0
      && ctx.body && ctx.body.id_token) {
      ctx.body = { ...ctx.body, id_token: await resign(ctx.body.id_token) };
    }
  });
  return provider.callback();
}

let handler = build();
const serve = (req, res) => handler(req, res);
const server = tls ? https.createServer(tls, serve) : http.createServer(serve);
server.listen(port, '127.0.0.1', () => {
  answer(`ready ${issuer} ${keys[0].kid}`);
});

const commands = readline.createInterface({ input: process.stdin });
commands.on('line', async (line) => {
  const [command, ...rest] = line.trim().split(' ');
  try {
    switch (command) {
      case 'rotate':
        keys = [await newKey(), ...keys];
        handler = build();
        answer(`rotated ${keys[0].kid}`);
        break;
      case 'mutate':
        mutation = JSON.parse(rest.join(' ') || '{}');
        answer('mutated');
        break;
      case 'jwks-requests':
        answer(`jwks-requests ${jwksRequests}`);
        break;
      default:
        answer(`unknown ${command}`);
    }
  } catch (e) {
    answer(`error ${e.message}`);
  }
});
// The test holds stdin: when it goes away, so does the provider.
commands.on('close', () => process.exit(0));
