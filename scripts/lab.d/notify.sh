#!/bin/sh
# notify script of the lab's vrrp_instances (and of the sync group with LAB_SYNC_GROUP=1).
# keepalived runs it as: notify.sh INSTANCE|GROUP NAME STATE PRIORITY
# It appends "<time> <arguments>" to /run/lab/notify.log. keepalived starts these scripts
# without waiting for them, so the log can be out of order; /run/lab/notify_fifo.log and
# /run/lab/state/ come from keepalived's notify FIFO, which is in order.
echo "$(date +%s.%N) $*" >>/run/lab/notify.log
exit 0
