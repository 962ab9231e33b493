/*
 * The refresh lease of PostgresTokenStore, as a Promela model for spin.
 * Read README.md next to this file first: it explains the abstraction, every process, every step that can
 * crash, the premises, and how to run it. `.ci/model` runs every configuration.
 *
 * Tokens are numbered: the server's first refresh token is 1, each rotation hands out the next number.
 * Replicas are numbered 1..N (0 means "nobody" in the owner and lock fields).
 *
 * Protocol variants (-D flags; none of them = the protocol of the design note with the two fixes of README.md:
 * the holder keeps its lease until its pair is stored, and the re-read under the lease is fenced):
 *   GIVE_UP_LEASE        step 6 as the design note writes it: once persistRetryLimit write attempts have failed,
 *                        the store stops renewing the lease and the client's later retry runs outside any lease
 *   UNFENCED_READ        step 5 as the design note writes it: the body's re-read is a plain read, even when a
 *                        sign-in elsewhere has cleared the lease (fails with SIGNIN)
 *   SIGNIN               adds a sign-in on another replica (step 8): a new token family, saved unconditionally
 *                        with a generation from a possibly stale view, clearing any lease
 *   SIGNOUT              (with SIGNIN) the sign-in may follow a sign-out there: the row was deleted and is made
 *                        again, so its fencing numbers start again from 0 (a fence number can repeat)
 *   BUG_OLD              the old protocol: an advisory lock only, no lease; the body's operations on the lock's
 *                        connection; a failed save retried later by the client outside the lock
 *   BUG_UNFENCED         the save inside the lease checks neither the fence nor the generation
 *   BUG_NO_REREAD        a waiter presents the refresh token it read before it took the lease
 *   BUG_RELEASE_PENDING  the lease is released while a background write is still pending
 *   CAS_ONLY             the save checks the generation but not the fence (fails with SIGNIN)
 *   FENCE_ONLY           the save checks the fence but not the generation (passes)
 *   RETAKE_OWN           the lease statement also matches `lease_owner = $me` (an acquisition retrying after its
 *                        answer was lost takes its own orphaned lease at once instead of waiting out the ttl)
 *   SIGNOUT_SIGNIN       a sign-out on one replica (the row deleted, the family revoked at the server, or the
 *                        revocation lost), then a sign-in on another: a new session whose row is made again at
 *                        generation 1, while the other replicas still hold what they knew of the old session
 *   BUG_GEN_ONLY         (with SIGNOUT_SIGNIN) a record is recognised by its generation alone: a replica that finds
 *                        the generation it knows presents the refresh token it holds, and conditional saves and
 *                        removals compare the generation only (no session identity)
 *   BUG_REMOVE_GEN_ONLY  (with SIGNOUT_SIGNIN) only the removal after a refused refresh compares the generation alone
 * Premises (-D flags that drop one; each is expected to fail, which shows the premise is needed):
 *   PHYSICAL             allow the one physical limit: a holder killed, or its answer lost, after the server
 *                        rotated and before its write landed
 *   PAUSE                a live holder's lease may expire (a holder paused longer than the ttl)
 * Bounds: N (replicas, 2..3), NREF (refreshes per replica), MAXRESTART, MAXKILL, MAXCRASH, PERSIST_LIMIT.
 */

#ifndef N
#define N 3
#endif
#ifndef NREF
#define NREF 1
#endif
#ifndef MAXRESTART
#define MAXRESTART 1
#endif
#ifndef MAXKILL
#define MAXKILL 1
#endif
#ifndef MAXCRASH
#define MAXCRASH 1
#endif
#ifndef PERSIST_LIMIT
#define PERSIST_LIMIT 2
#endif

/* ---- the database: one session row, an advisory lock, the replicas' connections ---- */
byte row_gen = 1;            /* generation */
byte row_rt = 1;             /* the refresh token stored (0 = no row) */
byte row_sid = 1;            /* the session identity stored (0 = no row): 1 for the first session, 2 for a sign-in's */
byte lease_owner = 0;        /* 0 = NULL */
byte lease_fence = 0;
bool lease_expired = false;  /* lease_expires_at <= now() */
byte lock_conn = 0;          /* the replica whose current connection holds the advisory lock; 0 = free */
bool db_up = true;
bool conn[4];                /* replica i has an open connection (the lock's, or a fresh pooled one) */
byte restarts = 0;
byte kills = 0;

/* ---- the token server (django-oauth-toolkit, reuse protection on, grace 0) ---- */
/* Token families: the initial session's tokens are 1, 2, ...; a sign-in's (SIGNIN) are 51, 52, ... */
#define FAM(t)         (t > 50 -> 2 : 1)
byte cur[3] = 1;             /* per family, the refresh token the server accepts now */
bool revoked[3];             /* per family, a reuse was detected and the family revoked */
bool signedout[3];           /* per family, revoked at the server by a sign-out (a refusal, not a reuse) */
byte latest = 1;             /* the newest family ever stored: the session the users have now (0: signed out) */
#define srv_current    cur[latest]
#define srv_revoked    revoked[latest]

/* ---- the replicas ---- */
bool alive[4];
bool holding[4];             /* the replica knows it holds the lease and renews it (heartbeat) */
byte myfence[4];             /* the fence of the lease it holds */
byte mem[4];                 /* the rotated refresh token it holds in memory (0 = none) */
byte ans[4];                 /* the server's answer on its way to the replica (0 = none) */
byte crashes = 0;
byte smem = 0;               /* the signing-in client's new refresh token (SIGNIN) */
/* What each replica knows of the session it holds: its identity, generation and refresh token (the client's memory
 * between refreshes). Every replica starts having restored the first session. */
byte ksid[4];
byte kg[4];
byte krt[4];

/* The re-read finds the record this replica knows (so it presents the refresh token it holds), and the conditions of
 * a save and of a removal: the session identity and the generation together, or (today's bug) the generation alone. */
#ifdef BUG_GEN_ONLY
#define KNOWN(k)       (row_gen == kg[k])
#define SID_OK(s)      true
#else
#define KNOWN(k)       (row_sid == ksid[k] && row_gen == kg[k])
#define SID_OK(s)      (row_sid == s)
#endif
#if defined(BUG_GEN_ONLY) || defined(BUG_REMOVE_GEN_ONLY)
#define REMOVE_OK(s, n) (row_sid != 0 && row_gen == n)
#else
#define REMOVE_OK(s, n) (row_sid == s && row_gen == n)
#endif

/* The current pair is somewhere a live replica can still use it: stored, held in memory, or on the wire. */
#define HELD_BY(k, t)  (alive[k] && (mem[k] == t || ans[k] == t))
#define HELD(t)        (row_rt == t || HELD_BY(1, t) || HELD_BY(2, t) || HELD_BY(3, t) || smem == t)
/* Replica k holds the current pair and nothing else does (killing it now is the physical limit). */
#define UNSTORED(k)    ((ans[k] == srv_current || mem[k] == srv_current) && row_rt != srv_current)

#ifdef PHYSICAL
#define CRASH_OK(k)    true
#else
#define CRASH_OK(k)    (!UNSTORED(k))
#endif

#ifdef PAUSE
#define EXPIRABLE      true
#else
/* Premise: a live holder renews its lease within the ttl, so only a lease nobody renews can expire. */
#define EXPIRABLE      (!(alive[lease_owner] && holding[lease_owner] && myfence[lease_owner] == lease_fence))
#endif

#ifdef RETAKE_OWN
/* The lease statement also takes a lease whose owner is this very acquisition (its earlier answer was lost). */
#define RETAKE(k)      (lease_owner == k)
#else
#define RETAKE(k)      false
#endif

/* The save inside the lease context (step 6); `late` = the client's own retry outside any lease (step 8). */
#if defined(BUG_UNFENCED)
#define SAVE_OK(late)  true
#elif defined(CAS_ONLY)
#define SAVE_OK(late)  (row_gen == g)
#elif defined(FENCE_ONLY)
#define SAVE_OK(late)  (late || (lease_fence == f && lease_owner == i))

#else
#define SAVE_OK(late)  (SID_OK(FAM(newrt)) && row_gen == g && (late || (lease_fence == f && lease_owner == i)))
#endif

/* I3 for a save of pair t at generation n: the row holds an older session, or an older generation of this one,
 * or this very pair (the same save landing again). */
#define I3(t, n)       (FAM(row_rt) < FAM(t) || (FAM(row_rt) == FAM(t) && \
                        (row_gen < n || (row_gen == n && row_rt == t))))

/* A statement needs a connection: the open one, else a fresh pooled one if the database is up. */
#define CONNECT        if :: !conn[i] && db_up -> conn[i] = true :: else -> skip fi

#define ERR      0
#define OK       1
#define LANDED   2
#define CONFLICT 3
#define REFUSED  4

/* The row is gone (a sign-out elsewhere, or a removal): the replica's session has ended. */
#define ENDED(k) \
    holding[k] = false; if :: lock_conn == k -> lock_conn = 0 :: else -> skip fi; \
    printf("R%d finds no session stored: its session has ended\n", k); goto finished

proctype Replica(byte i) {
    byte rt, g, f, newrt, res, cycles, tries, rsid;
    bool took, late, released;
    {
        skip;
next:
        if
        :: cycles == NREF -> goto finished
        :: else -> atomic { cycles++; tries = 0; late = false; released = false; took = false; res = ERR }
        fi;
#if defined(BUG_NO_REREAD) || defined(BUG_OLD)
        /* The client's read before it asks for exclusive access. */
        atomic { (conn[i] || db_up) -> conn[i] = true; rt = row_rt; g = row_gen; rsid = row_sid;
                 printf("R%d reads rt%d (generation %d)\n", i, rt, g) }
#endif
lock:
        /* Step 2: the advisory lock, a hint. Connection errors are retried (step 1). */
        do
        :: atomic { !conn[i] && db_up -> conn[i] = true }
        :: atomic { conn[i] && lock_conn == 0 -> lock_conn = i; printf("R%d takes the advisory lock\n", i) }; break
        od;
#ifdef BUG_OLD
        /* The old body: every operation on the lock's connection; no lease. */
        atomic {
            if
            :: lock_conn == i -> rt = row_rt; g = row_gen; res = OK;
               printf("R%d reads rt%d under the advisory lock\n", i, rt)
            :: else -> res = ERR
            fi
        }
        if
        :: res == ERR -> goto lock     /* the body failed (lockFailed); the client tries again */
        :: else -> skip
        fi;
#else
        /* Step 3: the lease, in one statement, on the lock's connection. */
        atomic {
            if
            :: conn[i] ->
               if
               :: lease_owner == 0 || lease_expired || RETAKE(i) ->
                  lease_fence++; lease_owner = i; lease_expired = false;
                  holding[i] = true; myfence[i] = lease_fence; f = lease_fence; took = true;
                  printf("R%d takes the lease (fence %d)\n", i, f)
               :: else -> took = false
               fi;
               res = OK
            :: else -> res = ERR
            fi
        }
        if
        :: res == ERR -> goto lock
        :: else -> skip
        fi;
        /* Its answer: lost if the connection ended meanwhile (a lease taken so is an orphan the ttl ends). */
        if
        :: conn[i] -> skip
        :: else -> holding[i] = false; printf("R%d: the lease's answer is lost\n", i); goto lock
        fi;
        if
        :: !took ->
           /* Another owner's live lease: release the advisory lock, wait (poll), go to step 2. */
           atomic { if :: lock_conn == i -> lock_conn = 0 :: else -> skip fi };
           (lease_owner == 0 || lease_expired);
           goto lock
        :: else -> skip
        fi;
#ifndef BUG_NO_REREAD
        /* Step 5: the body re-reads the row (a fresh connection if the lock's died). The read is fenced: it
         * returns the row only while the lease is still ours (a sign-in elsewhere may have cleared it). */
        atomic {
            (conn[i] || db_up) -> conn[i] = true;
#ifndef UNFENCED_READ
            if
            :: lease_owner != i || lease_fence != f ->
               holding[i] = false; if :: lock_conn == i -> lock_conn = 0 :: else -> skip fi;
               printf("R%d: the lease was cleared; it starts again\n", i); goto lock
            :: else -> skip
            fi;
#endif
            if
            :: row_sid == 0 -> ENDED(i)
            :: else -> skip
            fi;
            rsid = row_sid;
            if
            :: KNOWN(i) ->
               /* The record it knows: it presents the refresh token it holds. */
               rt = krt[i]; g = kg[i];
               printf("R%d re-reads generation %d, the record it knows: it holds rt%d\n", i, g, rt)
            :: else ->
               /* Another record (a rotation elsewhere, or another session: a switch): it takes it up. */
               rt = row_rt; g = row_gen; ksid[i] = row_sid; kg[i] = g; krt[i] = rt;
               printf("R%d re-reads rt%d (generation %d, session %d)\n", i, rt, g, rsid)
            fi
        }
#endif
#endif
present:
        /* The refresh: the token server rotates, or detects a reuse and revokes the family. */
        atomic {
            printf("R%d presents rt%d\n", i, rt);
            /* I4: a replica presents only a refresh token of the session whose record it read. */
            if
            :: FAM(rt) != rsid ->
               printf("   rt%d belongs to another session than the record R%d read (I4 violated)\n", rt, i)
            :: else -> skip
            fi;
            assert(FAM(rt) == rsid);
            res = OK;
            if
            :: signedout[FAM(rt)] ->
               res = REFUSED; printf("   the server refuses it: its session was signed out\n")
            :: !signedout[FAM(rt)] && !revoked[FAM(rt)] && rt == cur[FAM(rt)] ->
               cur[FAM(rt)]++; ans[i] = cur[FAM(rt)];
               printf("   the server rotates: rt%d is current, the answer is on the wire\n", ans[i])
            :: else ->
               revoked[FAM(rt)] = true;
               printf("   REUSE DETECTED: the server revokes the family (I1 violated)\n");
               assert(false)  /* I1 */
            fi
        }
        if
        :: res == REFUSED -> goto refused
        :: else -> skip
        fi;
        /* The answer arrives (or, past the physical limit, is lost after the rotation). */
        if
        :: atomic { ans[i] != 0 -> newrt = ans[i]; mem[i] = newrt; ans[i] = 0;
                    printf("R%d receives rt%d\n", i, newrt) }
#ifdef PHYSICAL
        :: atomic { ans[i] != 0 -> ans[i] = 0; printf("R%d: the answer is lost after the rotation\n", i) };
           goto present   /* a transport error is transient: the client tries again */
#endif
        fi;
write:
#ifdef BUG_OLD
        /* The old save: on the lock's connection while inside the body; later retries on any connection. */
        atomic {
            if :: late -> CONNECT :: else -> skip fi;
            if
            :: (late && conn[i]) || (!late && lock_conn == i) ->
               if
               :: row_gen == g ->
                  row_rt = newrt; row_gen = g + 1; res = LANDED;
                  printf("R%d stores rt%d (generation %d)\n", i, newrt, row_gen)
               :: else -> res = CONFLICT
               fi
            :: else -> res = ERR
            fi
        }
#else
        /* Step 6: the fenced save (a fresh pooled connection if the lock's died). */
        atomic {
            CONNECT;
            if
            :: conn[i] ->
               if
               :: SAVE_OK(late) ->
                  /* I3: no save lands over a newer session or a newer generation of its own session, nor
                   * replaces another pair of the same generation. */
                  if
                  :: !I3(newrt, g + 1) ->
                     printf("R%d's save of rt%d (generation %d) lands over rt%d (generation %d): I3 violated\n",
                            i, newrt, g + 1, row_rt, row_gen)
                  :: else -> skip
                  fi;
                  assert(I3(newrt, g + 1));
                  row_rt = newrt; row_gen = g + 1; row_sid = FAM(newrt); lease_owner = 0; lease_expired = false;
                  holding[i] = false; res = LANDED; kg[i] = g + 1; krt[i] = newrt;
                  printf("R%d stores rt%d (generation %d), which clears the lease\n", i, newrt, row_gen)
               :: else -> res = CONFLICT
               fi
            :: else -> res = ERR
            fi
        }
#endif
        if
        :: res == ERR -> goto failed
        :: else -> skip
        fi;
        /* Its answer: lost if the connection ended meanwhile (the write may have landed). */
        if
        :: conn[i] -> skip
        :: else -> printf("R%d: the save's answer is lost\n", i); goto failed
        fi;
        if
        :: res == LANDED -> goto unlock
        :: res == CONFLICT ->
           /* The client adopts what is stored and drops its pair. */
           atomic { mem[i] = 0; ksid[i] = row_sid; kg[i] = row_gen; krt[i] = row_rt;
                    printf("R%d: the save conflicts; it drops its pair\n", i) };
           goto release
        fi;
failed:
        /* writeFailed: the same save is retried on a fresh connection (in the background). */
#ifdef BUG_OLD
        if
        :: !late ->
           atomic { late = true;
                    if :: lock_conn == i -> lock_conn = 0 :: else -> skip fi;
                    printf("R%d: the save failed; the client keeps rt%d in memory\n", i, newrt) }
        :: else -> skip
        fi;
#endif
#ifdef BUG_RELEASE_PENDING
        if
        :: !released ->
           atomic { (conn[i] || db_up) -> conn[i] = true; released = true;
                    if :: lease_owner == i && lease_fence == f -> lease_owner = 0 :: else -> skip fi;
                    holding[i] = false;
                    printf("R%d releases the lease while its save is pending\n", i) }
        :: else -> skip
        fi;
#endif
#ifdef GIVE_UP_LEASE
        if
        :: !late ->
           tries++;
           if
           :: tries >= PERSIST_LIMIT ->
              /* persistRetryLimit spent: the heartbeat stops; the client retries later, outside any lease. */
              atomic { late = true; holding[i] = false;
                       printf("R%d: persistRetryLimit spent; the heartbeat stops, rt%d stays in memory\n", i, newrt) }
           :: else -> skip
           fi
        :: else -> skip
        fi;
#endif
        goto write;
release:
#ifndef BUG_OLD
        /* Step 7: release the lease if it is still ours (fenced); if that fails, the ttl ends it. */
        atomic {
            CONNECT;
            if :: conn[i] && lease_owner == i && lease_fence == f -> lease_owner = 0 :: else -> skip fi;
            holding[i] = false
        }
#endif
unlock:
        atomic { if :: lock_conn == i -> lock_conn = 0 :: else -> skip fi };
        goto next;
refused:
        /* The session ended at the server: the client removes the record it read, conditionally (one statement). */
        atomic {
            CONNECT;
            if
            :: conn[i] && REMOVE_OK(rsid, g) ->
               /* I5: a removal removes only the session of the replica that removes it. */
               if
               :: row_sid != rsid ->
                  printf("R%d's removal deletes session %d, not its own (I5 violated)\n", i, row_sid)
               :: else -> skip
               fi;
               assert(row_sid == rsid);
               row_rt = 0; row_gen = 0; row_sid = 0; lease_owner = 0; lease_expired = false;
               printf("R%d removes the session it held\n", i)
            :: else -> printf("R%d's conditional removal finds another record: nothing removed\n", i)
            fi;
            holding[i] = false;
            if :: lock_conn == i -> lock_conn = 0 :: else -> skip fi
        };
        goto finished;
finished:
        skip
    } unless { !alive[i] }
}

/* Process crashes: any replica, at any step between two statements (each statement is atomic). */
#define CRASH(k) \
    alive[k] = false; conn[k] = false; holding[k] = false; crashes++; \
    if :: lock_conn == k -> lock_conn = 0 :: else -> skip fi; \
    printf("R%d crashes\n", k)

active proctype Crash() {
end:
    do
    :: atomic { crashes < MAXCRASH && alive[1] && CRASH_OK(1) -> CRASH(1) }
    :: atomic { crashes < MAXCRASH && alive[2] && CRASH_OK(2) -> CRASH(2) }
    :: atomic { crashes < MAXCRASH && alive[3] && CRASH_OK(3) -> CRASH(3) }
    od
}

/* The database: an immediate restart ends every connection and advisory lock and keeps committed rows (each
 * statement is atomic: committed or not); pg_terminate_backend ends one connection. */
#define TERMINATE(k) \
    kills++; conn[k] = false; \
    if :: lock_conn == k -> lock_conn = 0 :: else -> skip fi; \
    printf("pg_terminate_backend of R%d's connection\n", k)

active proctype Database() {
end:
    do
    :: atomic { db_up && restarts < MAXRESTART ->
                restarts++; db_up = false; conn[0] = false; conn[1] = false; conn[2] = false; conn[3] = false; lock_conn = 0;
                printf("DATABASE RESTART: every connection and advisory lock ends\n") }
    :: atomic { !db_up -> db_up = true; printf("the database is up again\n") }
    :: atomic { kills < MAXKILL && conn[1] -> TERMINATE(1) }
    :: atomic { kills < MAXKILL && conn[2] -> TERMINATE(2) }
    :: atomic { kills < MAXKILL && conn[3] -> TERMINATE(3) }
    od
}

/* Time: a lease expires nondeterministically, but (premise) never while its live holder renews it. */
active proctype Clock() {
end:
    do
    :: atomic { lease_owner != 0 && !lease_expired && EXPIRABLE ->
                lease_expired = true; printf("the lease of R%d expires\n", lease_owner) }
    od
}

/* I2, checked in every reachable state: the current pair is never revoked and never only in a dead process. */
active proctype Invariant() {
end:
    atomic { latest != 0 && (srv_revoked || !HELD(srv_current)) ->
             printf("I2 VIOLATED: rt%d is neither stored nor held by a live replica\n", srv_current);
             assert(false) }
}

#ifdef SIGNIN
/* A sign-in on another replica (step 8): the server starts a new family; the client saves it unconditionally
 * (`.always`) with the generation it computes from its own, possibly stale, view of the row (any generation up to
 * the stored one, plus one), which clears any lease. If the save fails, or its answer is lost, the sign-in is
 * rolled back in memory (the client's default); a save that landed anyway stays. */
active proctype SignIn() {
    byte sv;
    atomic { cur[2] = 51; smem = 51; printf("S signs in: a new session, rt51\n") }
    atomic {
        if :: !conn[0] && db_up -> conn[0] = true :: else -> skip fi;
        if
        :: conn[0] ->
           sv = 1;
           do
           :: sv < row_gen -> sv++
           :: break
           od;
           row_rt = 51; row_gen = sv + 1; row_sid = 2; lease_owner = 0; lease_expired = false; latest = 2;
#ifdef SIGNOUT
           /* Or a sign-out before it deleted the row: the new row's fencing numbers start again. */
           if
           :: lease_fence = 0; printf("S signed out (the row went) and ")
           :: skip
           fi;
#endif
           printf("S stores rt51 (generation %d, from its view %d), which clears any lease\n", row_gen, sv)
        :: else -> smem = 0; printf("S: the save fails; the sign-in is rolled back\n"); goto signedin
        fi
    }
    if
    :: conn[0] -> skip
    :: else -> smem = 0; printf("S: the save's answer is lost; the sign-in is rolled back\n")
    fi;
signedin:
    skip
}
#endif

#ifdef SIGNOUT_SIGNIN
/* A sign-out on one replica, then a sign-in on another, while the other replicas run with what they knew. The
 * sign-out removes the session it holds (the current record) and asks the server to revoke it, which may not reach
 * it; the sign-in stores a new session unconditionally, its row made again at generation 1, which clears any lease. */
active proctype SignOutSignIn() {
    atomic { db_up && row_sid == 1 ->
             row_rt = 0; row_gen = 0; row_sid = 0; lease_owner = 0; lease_expired = false; lease_fence = 0;
             latest = 0; printf("S signs the user out: the row is deleted\n") }
    if
    :: atomic { signedout[1] = true; printf("   the server revokes the signed-out session\n") }
    :: printf("   the revocation does not reach the server\n")
    fi;
    atomic { db_up ->
             cur[2] = 51; smem = 51; row_rt = 51; row_gen = 1; row_sid = 2; lease_owner = 0; lease_expired = false;
             latest = 2; printf("T signs in on another replica: a new session, rt51, stored at generation 1\n") }
}
#endif

init {
    atomic {
        byte k = 1;
        do
        :: k <= N -> alive[k] = true; ksid[k] = 1; kg[k] = 1; krt[k] = 1; run Replica(k); k++
        :: else -> break
        od
    }
}
