#!/bin/sh
# vrrp_script chk_lab of the lab: fails while /run/lab/fault exists (scripts/lab fault HOST script).
[ ! -e /run/lab/fault ]
