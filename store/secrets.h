/* secrets.h - does a text hold a credential?
 *
 * The reference calls a file sensitive by its name only, so a prod.env
 * holding API_KEY=sk-live-... or a private key named deploy_ed25519 is
 * shown in full in a change summary. These content rules go beyond it:
 * a file whose text holds one of these is a sensitive file too (metadata
 * only, never hashed, its text never kept or shown). Each is a well-known
 * shape, so false positives are rare and fall on the safe side:
 *
 *   private_key        -----BEGIN [label ]PRIVATE KEY----- (RSA, EC, DSA,
 *                      OPENSSH, ENCRYPTED, PKCS#8) and -----BEGIN PGP
 *                      PRIVATE KEY BLOCK-----
 *   aws_access_key_id  AKIA or ASIA, then exactly 16 of [A-Z0-9]
 *   github_token       ghp_ gho_ ghu_ ghs_ ghr_, then 36+ of [A-Za-z0-9];
 *                      github_pat_, then 22+ of [A-Za-z0-9_]
 *   gitlab_token       glpat-, then 20+ of [A-Za-z0-9_-]
 *   slack_token        xoxa- xoxb- xoxp- xoxr- xoxs-, then 15+ of
 *                      [A-Za-z0-9-]
 *   openai_key         sk-, then 20+ of [A-Za-z0-9_-] holding a digit
 *                      (sk-proj-..., sk-live-..., sk-ant-...; the digit
 *                      keeps kebab-case words such as sk-learn-... out)
 *   stripe_key         sk_live_ or rk_live_, then 16+ of [A-Za-z0-9]
 *   google_api_key     AIza, then exactly 35 of [A-Za-z0-9_-]
 *   npm_token          npm_, then 36+ of [A-Za-z0-9] (what an .npmrc's
 *                      _authToken holds; the name .npmrc is not a rule:
 *                      most hold only registry settings)
 *   jwt                eyJ... . ey... . signature: three base64url
 *                      segments, 20+, 10+ and 16+ long (a signed token)
 *
 * A token starts at the text's start or after a byte that is not
 * [A-Za-z0-9_-] (so "disk-..." is not an sk- key); the two fixed-length
 * ones must end there too. Every kind but a private key so starts a
 * word of 20 or more bytes, which lets the search skip most bytes: it
 * runs over every text file of every scan. Plain C, no regex.
 */
#ifndef SBX_SECRETS_H
#define SBX_SECRETS_H

#include <stddef.h>

/* The kind of a credential in TEXT (LEN bytes, any content; no
 * NUL needed), as named above, or NULL if it holds none. */
const char *secrets_find(const char *text, size_t len);

#endif
