-- What the GPU was doing while a shape was timed (NVML): its SM clock, temperature and power, the
-- throttle reasons seen (a bit mask, NVML's clock event reasons that cost speed), and whether the
-- samples were taken again because of them; and the problem's bytes per second where it declares
-- its bytes. NULL where nothing was watched.
ALTER TABLE measurements ADD COLUMN sm_mhz REAL;
ALTER TABLE measurements ADD COLUMN temp_c REAL;
ALTER TABLE measurements ADD COLUMN power_w REAL;
ALTER TABLE measurements ADD COLUMN throttle INTEGER;
ALTER TABLE measurements ADD COLUMN retaken INTEGER;
ALTER TABLE measurements ADD COLUMN gbps REAL;
