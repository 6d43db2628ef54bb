#!/bin/bash
# Times the README's newcomer path in a fresh clone: clone, npm ci, npm start (ready), the delegation walkthrough.
# REPO (default: this repository) is cloned into /tmp/newcomer; port 8080 must be free.
set -u
T0=$(date +%s.%N)
rm -rf /tmp/newcomer && git clone -q "${REPO:-$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)}" /tmp/newcomer && cd /tmp/newcomer
T1=$(date +%s.%N)
npm ci --no-audit --no-fund > /tmp/newcomer-ci.log 2>&1 || { echo "npm ci failed"; exit 1; }
T2=$(date +%s.%N)
(npm start > /tmp/newcomer-start.log 2>&1 &) 
for i in $(seq 1 600); do curl -sf http://127.0.0.1:8080/health/ready >/dev/null && break; sleep 0.5; done
T3=$(date +%s.%N)
npm run walkthrough:delegation > /tmp/newcomer-walk.log 2>&1; RC=$?
T4=$(date +%s.%N)
pkill -f "/tmp/newcomer/" ; sleep 3; pkill -9 -f "/tmp/newcomer/"
python3 -c "
t=[$T0,$T1,$T2,$T3,$T4]
print('clone %.1fs, npm ci %.1fs, npm start to ready %.1fs, walkthrough %.1fs (rc $RC), total %.1fs' % (t[1]-t[0],t[2]-t[1],t[3]-t[2],t[4]-t[3],t[4]-t[0]))
"
uptime
