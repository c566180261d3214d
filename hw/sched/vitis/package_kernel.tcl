# Packages hw/sched/rtl as a Vitis RTL kernel (.xo). Usage (from the Makefile):
#   vivado -mode batch -source package_kernel.tcl -tclargs <out.xo> <rtl dir> <kernel.xml> <part> <link_addr_w>
# Untested here: no Vivado on this machine (hw/README.md, "Vitis packaging").
set xo_path     [lindex $argv 0]
set rtl_dir     [lindex $argv 1]
set kernel_xml  [lindex $argv 2]
set part        [lindex $argv 3]
set link_addr_w [lindex $argv 4]
set build_dir   [file dirname $xo_path]/ip

create_project -force sched_kernel_pkg $build_dir/prj -part $part
add_files -norecurse [list \
  $rtl_dir/fabemu_sched_pkg.sv $rtl_dir/sched_skid.sv $rtl_dir/sched_sdp_ram.sv $rtl_dir/sched_hop_core.sv \
  $rtl_dir/sched_axi_rd.sv $rtl_dir/sched_axi_wr.sv $rtl_dir/sched_axil_ctrl.sv $rtl_dir/sched_axi_check.sv \
  $rtl_dir/sched_kernel.sv]
set_property top sched_kernel [current_fileset]
update_compile_order -fileset sources_1

ipx::package_project -root_dir $build_dir/packaged -vendor fabemu.dev -library kernel -taxonomy /KernelIP -import_files -set_current false
ipx::unload_core $build_dir/packaged/component.xml
ipx::edit_ip_in_project -upgrade true -name tmp_edit_project -directory $build_dir/packaged $build_dir/packaged/component.xml
set core [ipx::current_core]
set_property core_revision 1 $core

# LINK_ADDR_W: v++ instantiates the packaged IP with the parameter values stored in its component.xml,
# so the value must be the IP's: its user parameter (what an IP instance is configured with) and its
# HDL parameter (the MODELPARAM passed to sched_kernel), not a generic of this packaging project.
proc set_ip_param {core name value} {
  set up [ipx::get_user_parameters $name -of_objects $core]
  if {$up eq ""} { set up [ipx::add_user_parameter $name $core] }
  set_property value_resolve_type user $up
  set_property value_format long $up
  set_property value $value $up
  set hp [ipx::get_hdl_parameters $name -of_objects $core]
  if {$hp eq ""} { set hp [ipx::add_hdl_parameter $name $core] }
  set_property value_format long $hp
  set_property value $value $hp
  if {[get_property value $up] != $value || [get_property value $hp] != $value} {
    error "package_kernel.tcl: $name did not reach the packaged IP (user [get_property value $up], hdl [get_property value $hp], wanted $value)"
  }
}
set_ip_param $core LINK_ADDR_W $link_addr_w
foreach busif {m00_axi m01_axi s_axi_control} {
  ipx::associate_bus_interfaces -busif $busif -clock ap_clk $core
}
set_property sdx_kernel true $core
set_property sdx_kernel_type rtl $core
ipx::create_xgui_files $core
ipx::update_checksums $core
ipx::check_integrity -kernel $core
ipx::save_core $core
close_project -delete

package_xo -force -xo_path $xo_path -kernel_name sched_kernel -ip_directory $build_dir/packaged -kernel_xml $kernel_xml
