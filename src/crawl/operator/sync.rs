//! A shared crawl's orders (`[frontier] database`): one row of the shared database holds the
//! whole document and a version; every worker polls it twice a second and adopts a newer one,
//! so an order sent to any worker holds on all. A change is written only over the version it
//! was made from (optimistic: a worker that lost the race reads again and redoes its change).
//!
//! The connection lives on a thread of its own, as the frontier's does: the synchronous
//! `postgres` client cannot run on the async runtime's threads.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::rules::Orders;

/// How often a worker looks for another worker's orders.
const POLL: Duration = Duration::from_millis(500);

/// In the schema of the frontier's tables (`frontier/postgres/schema.rs`), which the frontier
/// has created by the time the orders are opened.
const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS archiver.operator_orders (\
    id integer PRIMARY KEY, version bigint NOT NULL, orders text NOT NULL)";

enum Req {
    Fetch(mpsc::Sender<Result<(i64, Orders), String>>),
    Publish(i64, Orders, mpsc::Sender<Result<bool, String>>),
}

/// The orders' row in the shared database.
pub(super) struct OrdersDb {
    tx: Mutex<mpsc::Sender<Req>>,
    /// The last version polled, for the async side to adopt.
    inbox: Arc<Mutex<Option<(i64, Orders)>>>,
    /// The crawl's workers as the database last told (for the status document).
    workers: Arc<Mutex<Vec<serde_json::Value>>>,
}

impl OrdersDb {
    /// Connects (on the row's own thread) and makes sure the table and its row exist.
    pub(super) fn open(url: &str) -> Result<OrdersDb, String> {
        let (tx, rx) = mpsc::channel::<Req>();
        let (ready_tx, ready_rx) = mpsc::channel();
        let inbox = Arc::new(Mutex::new(None));
        let polled = inbox.clone();
        let workers = Arc::new(Mutex::new(Vec::new()));
        let seen = workers.clone();
        let url = url.to_string();
        std::thread::Builder::new()
            .name("operator-orders".into())
            .spawn(move || {
                let client = match connect(&url) {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        c
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                serve(client, rx, &polled, &seen);
            })
            .map_err(|e| format!("cannot start the orders' thread: {e}"))?;
        ready_rx
            .recv()
            .map_err(|_| "the orders' thread ended".to_string())??;
        Ok(OrdersDb {
            tx: Mutex::new(tx),
            inbox,
            workers,
        })
    }

    /// The orders in the database now, and their version.
    pub(super) fn fetch(&self) -> Result<(i64, Orders), String> {
        let (reply, answer) = mpsc::channel();
        self.send(Req::Fetch(reply))?;
        answer.recv().map_err(|_| gone())?
    }

    /// Writes `orders` as the version after `expect`; false when another worker wrote first.
    pub(super) fn publish(&self, expect: i64, orders: &Orders) -> Result<bool, String> {
        let (reply, answer) = mpsc::channel();
        self.send(Req::Publish(expect, orders.clone(), reply))?;
        answer.recv().map_err(|_| gone())?
    }

    /// The orders polled last, when newer than `than`.
    pub(super) fn newer(&self, than: i64) -> Option<(i64, Orders)> {
        let inbox = self.inbox.lock().unwrap_or_else(|p| p.into_inner());
        inbox.as_ref().filter(|(v, _)| *v > than).cloned()
    }

    /// The crawl's workers: name, URLs done, seconds since their last sign of life, ended.
    pub(super) fn workers(&self) -> Vec<serde_json::Value> {
        self.workers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn send(&self, req: Req) -> Result<(), String> {
        let tx = self.tx.lock().unwrap_or_else(|p| p.into_inner());
        tx.send(req).map_err(|_| gone())
    }
}

fn gone() -> String {
    "the connection for the shared orders is gone".to_string()
}

fn connect(url: &str) -> Result<postgres::Client, String> {
    let masked = |e: postgres::Error| crate::frontier::mask_secrets(&format!("{e}"));
    let mut client = postgres::Client::connect(url, postgres::NoTls).map_err(masked)?;
    // Two workers starting together may race to create the table: the loser tries again.
    if client.batch_execute(SCHEMA).is_err() {
        client.batch_execute(SCHEMA).map_err(masked)?;
    }
    client
        .execute(
            "INSERT INTO archiver.operator_orders (id, version, orders) VALUES (1, 0, '{}') \
             ON CONFLICT (id) DO NOTHING",
            &[],
        )
        .map_err(masked)?;
    Ok(client)
}

/// The thread: requests as they come, a poll when none came for half a second.
fn serve(
    mut client: postgres::Client,
    rx: mpsc::Receiver<Req>,
    inbox: &Mutex<Option<(i64, Orders)>>,
    workers: &Mutex<Vec<serde_json::Value>>,
) {
    loop {
        match rx.recv_timeout(POLL) {
            Ok(Req::Fetch(reply)) => {
                let _ = reply.send(read(&mut client));
            }
            Ok(Req::Publish(expect, orders, reply)) => {
                let _ = reply.send(write(&mut client, expect, &orders));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Ok(now) = read(&mut client) {
                    *inbox.lock().unwrap_or_else(|p| p.into_inner()) = Some(now);
                }
                if let Ok(list) = read_workers(&mut client) {
                    *workers.lock().unwrap_or_else(|p| p.into_inner()) = list;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

fn read(client: &mut postgres::Client) -> Result<(i64, Orders), String> {
    let row = client
        .query_one(
            "SELECT version, orders FROM archiver.operator_orders WHERE id = 1",
            &[],
        )
        .map_err(|e| format!("cannot read the shared orders: {e}"))?;
    let version: i64 = row.get(0);
    let text: String = row.get(1);
    let orders = serde_json::from_str(&text)
        .map_err(|e| format!("the shared orders cannot be read: {e}"))?;
    Ok((version, orders))
}

fn write(client: &mut postgres::Client, expect: i64, orders: &Orders) -> Result<bool, String> {
    let text = serde_json::to_string(orders).map_err(|e| e.to_string())?;
    let n = client
        .execute(
            "UPDATE archiver.operator_orders SET version = version + 1, orders = $2 \
             WHERE id = 1 AND version = $1",
            &[&expect, &text],
        )
        .map_err(|e| format!("cannot write the shared orders: {e}"))?;
    Ok(n == 1)
}

fn read_workers(client: &mut postgres::Client) -> Result<Vec<serde_json::Value>, postgres::Error> {
    let rows = client.query(
        "SELECT name, done, EXTRACT(EPOCH FROM (now() - heartbeat))::float8, ended IS NOT NULL \
         FROM archiver.workers ORDER BY name",
        &[],
    )?;
    Ok(rows
        .iter()
        .map(|r| {
            let (name, done, silent, ended): (String, i64, f64, bool) =
                (r.get(0), r.get(1), r.get(2), r.get(3));
            serde_json::json!({ "worker": name, "done": done, "silent_for": silent, "ended": ended })
        })
        .collect())
}
